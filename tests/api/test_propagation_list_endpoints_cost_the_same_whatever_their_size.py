"""The propagation API's lists issue the same number of SQL queries for 5 rows or 20: state,
backlog, rate, schedule and current run come with the page, not one query per row."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import services
from tests.jobs.helpers import enqueue

pytestmark = pytest.mark.django_db


@pytest.fixture
def grow(admin_user, mc_table, sc_table, make_queue, rule_set):  # type: ignore[no-untyped-def]
    """Add propagations SRC_i → DST_i (with rule sets, a backlog, a QUEUED run each) and a
    worker heartbeat per propagation."""
    rs = rule_set("RS", ":msg.n > 0")
    neg = rule_set("NEG", ":msg.n > 5")

    def add(start: int, stop: int) -> None:
        now = timezone.now()
        for i in range(start, stop):
            src, dst = make_queue(f"SRC_{i}", mc_table), make_queue(f"DST_{i}", sc_table)
            services.propagation_create(
                user=admin_user,
                name=f"P_{i}",
                source_queue=src,
                destination_queue=dst,
                positive_rule_set=rs,
                negative_rule_set=neg,
            )
            enqueue(src, [{"n": i}])
            services.worker_heartbeat(
                hostname=f"celery@w{i}",
                pid=1000 + i,
                queues=["propagation"],
                pool="prefork",
                concurrency=2,
                active=[],
                processed=i,
                started_at=now - timedelta(minutes=5),
            )
        services.propagation_dispatch(send=False)  # a QUEUED run per new propagation

    return add


def _count(client, path: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries), len(response.json()["results"])


@pytest.mark.parametrize(
    "path",
    [
        "/api/propagations/",
        "/api/propagations/?has_backlog=true&ordering=-backlog",
        "/api/propagation-runs/",
        "/api/propagations/P_1/runs/",
        "/api/workers/",
        "/api/status/dba_propagation/",
        "/api/status/dba_queue_schedules/",
        "/api/status/v_propagation_sender/",
        "/api/status/v_propagation_receiver/",
    ],
)
def test_a_list_costs_the_same_number_of_queries_for_more_rows(monitor_api, grow, path):
    grow(0, 5)
    small, small_rows = _count(monitor_api, f"{path}{'&' if '?' in path else '?'}limit=5")

    grow(5, 20)
    large, large_rows = _count(monitor_api, f"{path}{'&' if '?' in path else '?'}limit=20")

    if "P_1/runs" in path:  # one propagation's runs: one row however many propagations
        assert (small_rows, large_rows) == (1, 1)
    else:
        assert (small_rows, large_rows) == (5, 20)
    assert large == small


def test_each_propagation_row_carries_its_schedule_and_current_run(monitor_api, grow):
    grow(0, 3)

    with CaptureQueriesContext(connection) as ctx:
        rows = monitor_api.get("/api/propagations/").json()["results"]

    assert [(r["backlog"], r["state"], r["run"]["state"]) for r in rows] == [
        (1, "queued", "QUEUED")  # dispatched, no worker took it yet
    ] * 3
    assert all(r["run"]["propagation"] == r["name"] for r in rows)
    # token + user, groups for the role, maintenance mode, count, page: nothing per row.
    assert len(ctx.captured_queries) <= 6


@pytest.mark.parametrize("path", ["/api/topology/", "/api/attention/"])
def test_the_graph_and_the_attention_list_cost_the_same_for_more_propagations(
    monitor_api, grow, path
):
    grow(0, 3)
    with CaptureQueriesContext(connection) as small:
        monitor_api.get(path)

    grow(3, 20)
    with CaptureQueriesContext(connection) as large:
        response = monitor_api.get(path)

    assert response.status_code == 200, response.content
    assert len(large.captured_queries) == len(small.captured_queries)
