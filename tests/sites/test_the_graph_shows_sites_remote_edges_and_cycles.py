"""The topology graph with database links: this site and each linked site are groups, a
propagation to QUEUE@LINK is an edge into the remote site's group with its state, the remote's
own propagations are read through the link (one of them back here: a cycle A → B → A, flagged),
and a site that cannot be reached shows as unreachable instead of failing the page."""

from __future__ import annotations

import socket

import pytest
from django.conf import settings

from jobs import services
from sites.models import DatabaseLink
from tests.sites.helpers import SITE_B
from tests.sites.remote_queues import remote_hub

pytestmark = pytest.mark.django_db


@pytest.fixture
def to_b(site, make_link, admin_user, mc_table, make_queue):
    remote_hub(site, settings.AQ_GLOBAL_NAME)
    make_link("SITE_B")
    src = make_queue("SRC", mc_table)
    return services.propagation_create(
        user=admin_user, name="SRC_TO_B", source_queue=src, destination_queue="B_HUB@SITE_B"
    )


def _graph(admin_api) -> dict:
    response = admin_api.get("/api/topology/")
    assert response.status_code == 200, response.content
    return response.json()


def test_sites_are_groups_and_the_remote_queue_sits_in_its_sites_group(admin_api, to_b):
    graph = _graph(admin_api)

    sites = {s["global_name"]: s for s in graph["sites"]}
    local = settings.AQ_GLOBAL_NAME
    assert sites[local]["local"] is True
    assert sites[SITE_B]["reachable"] is True and sites[SITE_B]["links"] == ["SITE_B"]
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert nodes["SRC"]["parent"] == f"site:{local}"
    assert nodes["B_HUB@SITE_B"]["parent"] == f"site:{SITE_B}"
    assert nodes["B_HUB@SITE_B"]["kind"] == "REMOTE"
    edge = next(e for e in graph["edges"] if e["name"] == "SRC_TO_B")
    assert (edge["source"], edge["target"]) == (nodes["SRC"]["id"], nodes["B_HUB@SITE_B"]["id"])
    assert edge["remote"] is True and edge["state"] == "idle" and edge["colour"] == "info"


def test_the_remote_sites_own_propagations_are_read_and_the_cycle_is_flagged(admin_api, to_b):
    graph = _graph(admin_api)

    nodes = {n["id"]: n for n in graph["nodes"]}
    edges = {e["name"]: e for e in graph["edges"]}
    # B's local propagation: inside B's group, its state read at B (no schedule there: none).
    local_at_b = edges["B_HUB_TO_LOCAL"]
    assert nodes[local_at_b["target"]]["name"] == "B_LOCAL@SITE_B"
    assert local_at_b["cycle"] is False
    # B's propagation back to SRC here lands on this site's own SRC node: A → B → A.
    back = edges["B_HUB_TO_A"]
    assert nodes[back["target"]]["name"] == "SRC"
    assert back["state"] == "unscheduled"
    assert edges["SRC_TO_B"]["cycle"] is True and back["cycle"] is True
    (cycle,) = graph["cycles"]
    assert set(cycle["edges"]) == {edges["SRC_TO_B"]["id"], back["id"]}
    assert cycle["sites"] == sorted([settings.AQ_GLOBAL_NAME, SITE_B])


def test_the_page_draws_the_graph_with_its_sites(admin_client, to_b):
    response = admin_client.get("/propagations/topology/")
    assert response.status_code == 200
    assert SITE_B.encode() in response.content
    json_view = admin_client.get("/propagations/topology/?format=json")
    assert json_view.status_code == 200 and json_view.json()["cycles"]


def test_an_unreachable_site_is_shown_as_such_not_a_500(admin_api, to_b):
    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    DatabaseLink.objects.filter(name="SITE_B").update(port=port)

    graph = _graph(admin_api)

    site_b = next(s for s in graph["sites"] if s["global_name"] == SITE_B)
    assert site_b["reachable"] is False and "cannot be reached" in site_b["error"]
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert nodes["B_HUB@SITE_B"]["depth"] is None  # known from here, not read there
    assert "B_HUB_TO_A" not in {e["name"] for e in graph["edges"]}
    assert graph["cycles"] == []


def test_without_links_the_graph_has_no_groups(admin_api, admin_user, mc_table, make_queue):
    a, b = make_queue("A", mc_table), make_queue("B", mc_table)
    services.propagation_create(user=admin_user, name="A_B", source_queue=a, destination_queue=b)
    services.propagation_create(user=admin_user, name="B_A", source_queue=b, destination_queue=a)

    graph = _graph(admin_api)

    assert graph["sites"] == [] and all("parent" not in n for n in graph["nodes"])
    assert {e["name"] for e in graph["edges"] if e["cycle"]} == {"A_B", "B_A"}


def test_a_site_that_accepts_but_never_answers_is_unreachable_not_a_hang(admin_api, to_b):
    # A listening socket nobody serves: TCP connects, PostgreSQL's handshake never comes; the
    # read's connect timeout (AQ_SITE_READ_TIMEOUT_S) gives up and the page still answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        DatabaseLink.objects.filter(name="SITE_B").update(port=silent.getsockname()[1])

        graph = _graph(admin_api)

    site_b = next(s for s in graph["sites"] if s["global_name"] == SITE_B)
    assert site_b["reachable"] is False and site_b["error"]


def test_with_two_instances_local_queues_sit_in_instance_groups_inside_this_site(
    admin_api, admin_user, to_b
):
    from instances.services import instance_heartbeat
    from queues import services as qs

    for name in ("NODE_A", "NODE_B"):
        instance_heartbeat(name=name, host="h", worker=f"w@{name}")
    qt = qs.queue_table_create(user=admin_user, name="QT_ON_B", primary_instance="NODE_B")
    qs.queue_create(user=admin_user, name="ON_B", queue_table=qt)

    graph = _graph(admin_api)

    local = f"site:{settings.AQ_GLOBAL_NAME}"
    groups = {g["name"]: g for g in graph["instances"]}
    assert groups["NODE_B"]["parent"] == local
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert nodes["ON_B"]["parent"] == groups["NODE_B"]["id"]
    # The remote queue stays in its site's group, not in an instance's.
    assert nodes["B_HUB@SITE_B"]["parent"] == f"site:{SITE_B}"
