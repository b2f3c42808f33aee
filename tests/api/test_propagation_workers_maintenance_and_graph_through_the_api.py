"""Workers, maintenance mode, the topology graph and the attention list through the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import ChangeLogEntry
from jobs import services
from jobs.models import Maintenance
from queues import services as qs
from tests.jobs.helpers import enqueue

pytestmark = pytest.mark.django_db


def _heartbeat(hostname: str, *, stopping: bool = False) -> None:
    services.worker_heartbeat(
        hostname=hostname,
        pid=4242,
        queues=["propagation", "celery"],
        pool="prefork",
        concurrency=4,
        active=[{"id": "t1", "name": "jobs.tasks.propagation_run", "args": [1]}],
        processed=7,
        started_at=timezone.now() - timedelta(hours=1),
        stopping=stopping,
    )


def test_workers_are_listed_alive_first_with_their_queues(monitor_api):
    _heartbeat("celery@b-alive")
    _heartbeat("celery@a-stopped", stopping=True)

    rows = monitor_api.get("/api/workers/").json()["results"]

    assert [(r["hostname"], r["alive"]) for r in rows] == [
        ("celery@b-alive", True),
        ("celery@a-stopped", False),
    ]
    alive = rows[0]
    assert (alive["pid"], alive["queues"], alive["concurrency"], alive["processed"]) == (
        4242,
        ["propagation", "celery"],
        4,
        7,
    )
    assert alive["active"][0]["name"] == "jobs.tasks.propagation_run"
    assert (alive["stopped_at"], alive["runs"]) == (None, [])
    assert rows[1]["stopped_at"] is not None


def test_maintenance_mode_is_read_and_switched(operator_api, monitor_api):
    assert monitor_api.get("/api/maintenance/").json() == {
        "restricted": False,
        "since": None,
        "by": "",
        "reason": "",
    }

    on = operator_api.put("/api/maintenance/", {"restricted": True, "reason": "disk swap"})

    assert on.status_code == 200, on.content
    read = monitor_api.get("/api/maintenance/").json()
    assert (read["restricted"], read["by"], read["reason"]) == (True, "oscar", "disk swap")
    assert read["since"] is not None
    assert monitor_api.get("/api/attention/").json()["maintenance"]["restricted"] is True
    assert ChangeLogEntry.objects.filter(verb="maintenance_set").count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "restricted"),
        ({"restricted": "perhaps"}, "restricted"),
        ({"restricted": True, "reason": "x" * 4001}, "reason"),
    ],
)
def test_bad_maintenance_input_names_the_field(operator_api, body, field):
    response = operator_api.put("/api/maintenance/", body)

    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not Maintenance.objects.filter(restricted=True).exists()


def test_switching_maintenance_to_what_it_is_is_a_409(operator_api):
    response = operator_api.patch("/api/maintenance/", {"restricted": False})

    assert response.status_code == 409, response.content
    assert response.json()["detail"] == "Maintenance mode is already off."


def test_the_topology_has_queues_as_nodes_and_propagations_as_edges(
    monitor_api, admin_user, mc_table, sc_table, make_queue
):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst
    )
    enqueue(src, [{"n": 1}, {"n": 2}])

    graph = monitor_api.get("/api/topology/").json()

    nodes = {n["name"]: n for n in graph["nodes"]}
    assert {"SRC", "DST"} <= set(nodes)
    assert nodes["SRC"]["depth"] == 2
    [edge] = graph["edges"]
    assert (edge["name"], edge["source"], edge["target"]) == (
        "P",
        nodes["SRC"]["id"],
        nodes["DST"]["id"],
    )
    assert (edge["state"], edge["backlog"], edge["url"]) == ("idle", 2, p.get_absolute_url())


def test_the_topology_for_a_name_has_those_queues_their_propagations_and_the_other_ends(
    monitor_api, monitor_client, admin_user, mc_table, sc_table, make_queue
):
    src, dst = make_queue("ORDERS_IN", mc_table), make_queue("BILLING", sc_table)
    make_queue("UNRELATED", sc_table)
    services.propagation_create(
        user=admin_user, name="P_ORDERS", source_queue=src, destination_queue=dst
    )
    enqueue(src, [{"n": 1}])

    graph = monitor_api.get("/api/topology/", {"q": "orders"}).json()

    assert {n["name"]: n["depth"] for n in graph["nodes"]} == {"ORDERS_IN": 1, "BILLING": 0}
    assert [e["name"] for e in graph["edges"]] == ["P_ORDERS"]
    # The page's own data URL answers the same.
    page = monitor_client.get("/propagations/topology/", {"format": "json", "q": "ORDERS"}).json()
    assert {n["name"] for n in page["nodes"]} == {"ORDERS_IN", "BILLING"}


def test_a_propagation_whose_oldest_message_waits_over_a_minute_is_falling_behind(
    admin_user, mc_table, sc_table, make_queue
):
    from django.db import connection

    from jobs.selectors import attention

    src, idle_src = make_queue("SRC", mc_table), make_queue("IDLE_SRC", mc_table)
    other_table = qs.queue_table_create(user=admin_user, name="QT_MC2", multiple_consumers=True)
    empty_src = make_queue("EMPTY_SRC", other_table)
    for name, source in (("P_LATE", src), ("P_IDLE", idle_src), ("P_EMPTY", empty_src)):
        services.propagation_create(
            user=admin_user,
            name=name,
            source_queue=source,
            destination_queue=make_queue(f"DST_{name}", sc_table),
        )
    enqueue(src, [{"n": 1}, {"n": 2}])
    with connection.cursor() as cur:
        # Enqueued five minutes ago; the commit sequence is the COMMIT's, which this test's
        # transaction never reaches.
        cur.execute(
            "UPDATE aq_message SET enq_time = now() - interval '5 minutes', "
            "commit_seq = coalesce(commit_seq, id) WHERE queue_id = %s",
            [src.pk],
        )

    behind = attention()["behind"]

    assert [(b["propagation"].name, b["propagation"].backlog) for b in behind] == [("P_LATE", 2)]
    assert behind[0]["age"] > 240


def test_the_attention_list_shows_the_first_of_each_list_and_says_which_have_more(
    admin_user, operator_user, mc_table, sc_table, make_queue
):
    from jobs.selectors import attention

    src = make_queue("SRC", mc_table)
    for k in range(3):
        p = services.propagation_create(
            user=admin_user,
            name=f"P{k}",
            source_queue=src,
            destination_queue=make_queue(f"DST{k}", sc_table),
        )
        services.schedule_disable(user=operator_user, propagation=p)

    short = attention(limit=2)

    assert [p.name for p in short["disabled"]] == ["P0", "P1"]
    assert short["truncated"] == ["disabled"] and short["total"] == 3
    assert attention(limit=3)["truncated"] == []


def test_the_attention_list_names_disabled_propagations_and_held_messages(
    monitor_api, admin_user, operator_user, mc_table, sc_table, make_queue, expired_message
):
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
    )
    services.schedule_disable(user=operator_user, propagation=p)

    body = monitor_api.get("/api/attention/").json()

    assert [(d["name"], d["state"]) for d in body["disabled"]] == [("P", "disabled")]
    assert (body["failing"], body["stuck"], body["behind"], body["total"]) == ([], [], [], 1)
    _source, exq, _mid = expired_message
    assert body["exception_queues"] == [{"id": exq.pk, "name": exq.name, "held": 1}]
