"""The list's rate reads a bounded run history. It once looked for "the latest run seen in the
last minute" by scanning a propagation's whole run history whenever it had none (stopped,
disabled, waiting for a window): a run per slice is 1440 rows a day, so the live list (every
3 s) slowed down with age."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from jobs import services
from jobs.selectors import propagation_list

pytestmark = pytest.mark.django_db


def _history(propagation_id: int, n: int, *, ago: str) -> None:
    with connection.cursor() as c:
        c.execute(
            """
            INSERT INTO jobs_propagationrun (propagation_id, state, end_reason, task_id, worker,
                queued_at, started_at, heartbeat_at, ended_at, waiting, batches, messages,
                propagated, bytes, discarded, exceptions, dequeue_time, rule_time, enqueue_time,
                error, folded)
            SELECT %s, 'SUCCEEDED', 'slice', '', 'w', now() - %s::interval,
                   now() - %s::interval - interval '60 s', now() - %s::interval,
                   now() - %s::interval, false, 1, 600, 600, 6000, 0, 0, 0, 0, 0, '', true
            FROM generate_series(1, %s)
            """,
            [propagation_id, ago, ago, ago, ago, n],
        )
        c.execute("ANALYZE jobs_propagationrun")


def _rows_removed_by_filter(plan: dict) -> int:
    own = plan.get("Rows Removed by Filter", 0) * plan.get("Actual Loops", 1)
    return own + sum(_rows_removed_by_filter(p) for p in plan.get("Plans", []))


@pytest.fixture
def props(admin_user, mc_table, sc_table, make_queue):
    src = make_queue("SRC", mc_table)
    return [
        services.propagation_create(
            user=admin_user,
            name=f"P{i}",
            source_queue=src,
            destination_queue=make_queue(f"D{i}", sc_table),
        )
        for i in range(2)
    ]


def test_the_rate_of_an_idle_propagation_does_not_read_its_whole_history(props):
    stopped, live = props
    _history(stopped.pk, 20_000, ago="1 day")
    _history(live.pk, 1, ago="1 s")
    sql, params = propagation_list().order_by("name").query.sql_with_params()
    with connection.cursor() as c:
        c.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        raw = c.fetchone()[0]
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    assert _rows_removed_by_filter(plan) < 1_000
    rates = {p.name: p.rate for p in propagation_list()}
    assert rates["P0"] == 0.0 and rates["P1"] == pytest.approx(10.0, rel=0.01)
