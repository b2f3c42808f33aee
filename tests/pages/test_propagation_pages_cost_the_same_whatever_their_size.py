"""The propagation list and the runs list issue the same number of SQL queries for 4 rows or 40
(no N+1), with backlogs, rule sets, schedules and current runs on every row."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import selectors, services
from jobs.models import PropagationRun, PropagationSchedule
from queues import engine
from queues import services as qs


@pytest.fixture(autouse=True)
def _maintenance_row(db) -> None:
    """The first page read creates the (off) maintenance row; do it before counting."""
    selectors.maintenance()


def _grow(admin_user, queues: dict, start: int, stop: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(start, stop):
        dst = qs.queue_create(user=admin_user, name=f"D_{i}", queue_table=queues["dst"].queue_table)
        p = services.propagation_create(
            user=admin_user,
            name=f"P_{i}",
            source_queue=queues["src"],
            destination_queue=dst,
            positive_rule_set=queues["rule_set"] if i % 2 else None,
            negative_rule_set=None if i % 2 else queues["rule_set"],
            schedule=i % 3 != 0,
        )
        now = timezone.now()
        run = PropagationRun.objects.create(
            propagation=p, state="RUNNING", worker="w", started_at=now, heartbeat_at=now
        )
        PropagationRun.objects.create(propagation=p, state="FAILED", error="boom", ended_at=now)
        PropagationSchedule.objects.filter(propagation=p).update(
            run=run, failures=i % 2, last_error_msg="boom" if i % 2 else ""
        )
    qs.message_enqueue(
        user=admin_user, queue=queues["src"], messages=[engine.NewMessage(payload={"i": start})]
    )


def _count(client, path: str, **headers: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, **headers)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_the_propagation_list_costs_the_same_for_more_propagations(
    admin_client, admin_user, propagation_queues
):
    _grow(admin_user, propagation_queues, 0, 4)
    small = _count(admin_client, "/propagations/?per_page=4")
    small_fragment = _count(admin_client, "/propagations/?per_page=4", HTTP_HX_REQUEST="true")

    _grow(admin_user, propagation_queues, 4, 40)
    large = _count(admin_client, "/propagations/?per_page=40")
    html = admin_client.get("/propagations/?per_page=40").content.decode()

    assert html.count("data-propagation=") == 40  # the larger page really shows more rows
    assert "RS_EU" in html and 'data-state="unscheduled"' in html
    assert large == small
    assert (
        _count(admin_client, "/propagations/?per_page=40", HTTP_HX_REQUEST="true") == small_fragment
    )


def test_the_runs_list_costs_the_same_for_more_runs(admin_client, admin_user, propagation_queues):
    _grow(admin_user, propagation_queues, 0, 3)
    small = _count(admin_client, "/propagations/runs/?per_page=6")

    _grow(admin_user, propagation_queues, 3, 30)
    large = _count(admin_client, "/propagations/runs/?per_page=60")

    assert large == small


def test_the_propagation_page_costs_the_same_for_a_longer_history(admin_client, propagation):
    for _ in range(3):
        PropagationRun.objects.create(propagation=propagation, state="SUCCEEDED")
    small = _count(admin_client, f"/propagations/{propagation.pk}/")

    for _ in range(40):
        PropagationRun.objects.create(propagation=propagation, state="SUCCEEDED")
    large = _count(admin_client, f"/propagations/{propagation.pk}/")

    assert large == small


def test_the_workers_page_costs_the_same_for_more_workers(monitor_client, propagation):
    def beat(i: int) -> None:
        services.worker_heartbeat(
            hostname=f"celery@w{i}",
            pid=i,
            queues=["propagation"],
            pool="prefork",
            concurrency=2,
            active=[],
            processed=0,
            started_at=timezone.now(),
        )
        PropagationRun.objects.create(
            propagation=propagation, state="RUNNING", worker=f"celery@w{i}"
        )

    beat(0)
    small = _count(monitor_client, "/propagations/workers/")
    for i in range(1, 20):
        beat(i)
    large = _count(monitor_client, "/propagations/workers/")

    assert large == small
