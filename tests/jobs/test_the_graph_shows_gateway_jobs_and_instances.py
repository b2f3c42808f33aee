"""The topology graph's gateway and instance parts, through its JSON (the page's ?format=json and
/api/topology/): a gateway link is a group of its foreign queues NAME@LINK, named with the system
it reaches; a gateway job is an edge between our queue and the foreign queue in its direction,
coloured by its status as a propagation is by its state; with two instances, queues sit in their
owner instance's group; the name filter keeps a job when either end matches; and the graph costs
the same number of queries whatever the number of jobs, links and instances."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gateway import services as gw
from gateway.models import Job
from instances import services as inst
from jobs import services
from queues import services as qs
from tests.api.test_the_schema_says_which_fields_may_be_null_or_blank import (
    _validate as validate,  # OpenAPI's nullable read as JSON Schema
)
from tests.gateway.helpers import CLOSED

pytestmark = pytest.mark.django_db


@pytest.fixture
def gateway(admin_user, mc_table, sc_table, make_queue) -> dict[str, Any]:
    """ORDERS → OUT_Q@RABBIT (outbound), IN_Q@RABBIT → AUDIT (inbound), a RabbitMQ link with a
    third foreign queue no job uses, an MQTT link with none, and a propagation ORDERS → AUDIT."""
    orders, audit = make_queue("ORDERS", mc_table), make_queue("AUDIT", sc_table)
    rabbit = gw.link_create(user=admin_user, name="RABBIT", link_type="AMQP", properties=CLOSED)
    gw.link_create(user=admin_user, name="MOSQ", link_type="MQTT", properties=CLOSED)
    for name in ("OUT_Q", "IN_Q", "SPARE_Q"):
        gw.foreign_queue_register(user=admin_user, name=name, link=rabbit, provider_queue=name)
    out = gw.job_create(
        user=admin_user,
        job_name="JOB_OUT",
        propagation_type="OUTBOUND",
        source="ORDERS",
        destination="OUT_Q@RABBIT",
    )
    inb = gw.job_create(
        user=admin_user,
        job_name="JOB_IN",
        propagation_type="INBOUND",
        source="IN_Q@RABBIT",
        destination="AUDIT",
    )
    services.propagation_create(
        user=admin_user, name="ORDERS_AUDIT", source_queue=orders, destination_queue=audit
    )
    return {"out": out, "in": inb, "rabbit": rabbit}


def _graph(client: Any, path: str = "/api/topology/") -> dict[str, Any]:
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_link_is_a_group_of_its_foreign_queues_named_with_its_system(admin_api, gateway):
    graph = _graph(admin_api)

    links = {g["name"]: g for g in graph["gateway_links"]}
    assert {n: (g["kind"], g["link_type"], g["system"]) for n, g in links.items()} == {
        "MOSQ": ("gateway_link", "MQTT", "MQTT"),
        "RABBIT": ("gateway_link", "AMQP", "RabbitMQ"),
    }
    assert links["RABBIT"]["url"] == f"/gateway/links/{gateway['rabbit'].pk}/"
    foreign = {n["name"]: n for n in graph["nodes"] if n["kind"] == "FOREIGN"}
    assert sorted(foreign) == ["IN_Q@RABBIT", "OUT_Q@RABBIT", "SPARE_Q@RABBIT"]
    assert {n["parent"] for n in foreign.values()} == {links["RABBIT"]["id"]}
    assert foreign["OUT_Q@RABBIT"]["link_type"] == "AMQP"
    assert foreign["OUT_Q@RABBIT"]["depth"] is None  # a foreign system's depth is not read


def test_a_job_is_an_edge_in_its_direction_and_a_propagation_says_its_kind(admin_api, gateway):
    graph = _graph(admin_api)

    ids = {n["name"]: n["id"] for n in graph["nodes"]}
    edges = {e["name"]: e for e in graph["edges"]}
    assert edges["ORDERS_AUDIT"]["kind"] == "propagation"
    out, inb = edges["JOB_OUT"], edges["JOB_IN"]
    assert (out["kind"], out["direction"]) == ("gateway_job", "OUTBOUND")
    assert (out["source"], out["target"]) == (ids["ORDERS"], ids["OUT_Q@RABBIT"])
    assert (inb["kind"], inb["direction"]) == ("gateway_job", "INBOUND")
    assert (inb["source"], inb["target"]) == (ids["IN_Q@RABBIT"], ids["AUDIT"])
    assert (out["state"], out["enabled"], out["colour"]) == ("READY", True, "success")
    assert out["url"] == f"/gateway/jobs/{gateway['out'].pk}/"
    assert (out["destination"], inb["destination"]) == ("OUT_Q@RABBIT", "AUDIT")


def test_an_outbound_job_counts_what_its_source_keeps_for_it(admin_api, admin_user, gateway):
    from tests.jobs.helpers import enqueue

    orders = gateway["out"].source_queue
    enqueue(orders, [{"n": i} for i in range(3)])

    edges = {e["name"]: e for e in _graph(admin_api)["edges"]}

    assert edges["JOB_OUT"]["backlog"] == 3
    assert edges["JOB_IN"]["backlog"] == 0  # a foreign source's depth is not read


def test_a_jobs_status_and_enabled_flag_colour_its_edge(admin_api, admin_user, gateway):
    gw.job_disable(user=admin_user, job=gateway["out"])
    # The agent's lifecycle writes FAILED after 16 failures; here the row is set as it would be.
    Job.objects.filter(pk=gateway["in"].pk).update(status="FAILED", failures=16)

    edges = {e["name"]: e for e in _graph(admin_api)["edges"]}

    assert (edges["JOB_OUT"]["enabled"], edges["JOB_OUT"]["colour"]) == (False, "secondary")
    assert (edges["JOB_IN"]["state"], edges["JOB_IN"]["colour"]) == ("FAILED", "danger")


def _beat(*names: str) -> None:
    for name in names:
        inst.instance_heartbeat(name=name, host=f"{name.lower()}.example", worker=f"w@{name}")


def test_with_two_instances_queues_sit_in_their_owner_instances_group(admin_api, admin_user):
    _beat("NODE_A", "NODE_B")
    for node in ("A", "B"):
        qt = qs.queue_table_create(
            user=admin_user, name=f"QT_{node}", primary_instance=f"NODE_{node}"
        )
        qs.queue_create(user=admin_user, name=f"Q_{node}", queue_table=qt)

    graph = _graph(admin_api)

    groups = {g["name"]: g for g in graph["instances"]}
    assert sorted(groups) == ["NODE_A", "NODE_B"]
    assert {g["kind"] for g in groups.values()} == {"instance"}
    assert groups["NODE_A"]["status"] == "UP" and "parent" not in groups["NODE_A"]
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert nodes["Q_A"]["instance"] == "NODE_A"
    assert nodes["Q_A"]["parent"] == groups["NODE_A"]["id"]
    assert nodes["Q_B"]["parent"] == groups["NODE_B"]["id"]


def test_with_one_instance_there_are_no_instance_groups(admin_api, admin_user):
    _beat("NODE_A")
    qt = qs.queue_table_create(user=admin_user, name="QT_A", primary_instance="NODE_A")
    qs.queue_create(user=admin_user, name="Q_A", queue_table=qt)

    graph = _graph(admin_api)

    assert graph["instances"] == []
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert nodes["Q_A"]["instance"] == "NODE_A" and "parent" not in nodes["Q_A"]


@pytest.mark.parametrize(
    "path", ["/api/topology/?q={}", "/propagations/topology/?format=json&q={}"]
)
def test_the_name_filter_keeps_a_job_when_either_end_matches(
    admin_api, admin_client, gateway, path
):
    client = admin_api if path.startswith("/api/") else admin_client

    by_foreign = _graph(client, path.format("out_q"))
    by_queue = _graph(client, path.format("AUDIT"))

    assert [e["name"] for e in by_foreign["edges"]] == ["JOB_OUT"]
    assert sorted(n["name"] for n in by_foreign["nodes"]) == ["ORDERS", "OUT_Q@RABBIT"]
    assert [g["name"] for g in by_foreign["gateway_links"]] == ["RABBIT"]
    assert sorted(e["name"] for e in by_queue["edges"]) == ["JOB_IN", "ORDERS_AUDIT"]
    assert sorted(n["name"] for n in by_queue["nodes"]) == ["AUDIT", "IN_Q@RABBIT", "ORDERS"]


def test_the_graph_with_gateway_and_instances_matches_the_schema(
    client, monitor_user, admin_api, admin_user, gateway
):
    _beat("NODE_A", "NODE_B")
    qt = qs.queue_table_create(user=admin_user, name="QT_B", primary_instance="NODE_B")
    qs.queue_create(user=admin_user, name="Q_B", queue_table=qt)
    client.force_login(monitor_user)
    schema = yaml.safe_load(client.get("/api/schema/").content)

    graph = _graph(admin_api)

    assert graph["instances"] and graph["gateway_links"]
    validate(schema, "Topology", graph)


# --- the cost of the graph ---------------------------------------------------------------------


def _grow(user: Any, start: int, stop: int) -> None:
    """Per i: a link with two foreign queues, an outbound and an inbound job, a propagation, an
    instance owning a queue table of its own."""
    mc = qs.queue_table_create(
        user=user, name=f"QT_MC_{start}", multiple_consumers=True, primary_instance=f"N_{start}"
    )
    for i in range(start, stop):
        _beat(f"N_{i}")
        sc = qs.queue_table_create(user=user, name=f"QT_{i}", primary_instance=f"N_{i}")
        src = qs.queue_create(user=user, name=f"SRC_{i}", queue_table=mc)
        dst = qs.queue_create(user=user, name=f"DST_{i}", queue_table=sc)
        link = gw.link_create(
            user=user, name=f"L_{i}", link_type="REDIS" if i % 2 else "NATS", properties=CLOSED
        )
        fq_out = gw.foreign_queue_register(user=user, name=f"FO_{i}", link=link)
        fq_in = gw.foreign_queue_register(user=user, name=f"FI_{i}", link=link)
        gw.job_create(
            user=user,
            job_name=f"JO_{i}",
            propagation_type="OUTBOUND",
            source=src.name,
            destination=str(fq_out),
        )
        gw.job_create(
            user=user,
            job_name=f"JI_{i}",
            propagation_type="INBOUND",
            source=str(fq_in),
            destination=dst.name,
        )
        services.propagation_create(
            user=user, name=f"P_{i}", source_queue=src, destination_queue=dst
        )


def _count(client: Any, path: str) -> tuple[int, dict[str, Any]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries), response.json()


@pytest.mark.parametrize("path", ["/api/topology/", "/propagations/topology/?format=json"])
def test_the_graph_costs_the_same_for_more_jobs_links_and_instances(
    admin_api, admin_client, admin_user, path
):
    client = admin_api if path.startswith("/api/") else admin_client
    _grow(admin_user, 0, 2)
    client.get(path)  # the first read creates the maintenance row: not part of the cost
    small, graph = _count(client, path)
    assert len([e for e in graph["edges"] if e["kind"] == "gateway_job"]) == 4

    _grow(admin_user, 2, 12)
    large, graph = _count(client, path)

    assert len([e for e in graph["edges"] if e["kind"] == "gateway_job"]) == 24
    assert len(graph["gateway_links"]) == 12 and len(graph["instances"]) == 12
    assert large == small
