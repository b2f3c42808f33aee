"""A scrape reads the database once per metric family: 20 queues (and 20 destinations) with propagations and messages
cost the same queries as 2 (there may be 10,000 queues)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import services as job_services
from queues import services as qs
from tests.monitoring.helpers import enqueue

pytestmark = pytest.mark.django_db


def _grow(user, qt, start: int, stop: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(start, stop):
        q = qs.queue_create(user=user, name=f"Q{i}", queue_table=qt)
        dst = qs.queue_create(user=user, name=f"D{i}", queue_table=qt)
        job_services.propagation_create(
            user=user, name=f"P{i}", source_queue=q, destination_queue=dst, schedule=i % 2 == 1
        )
        enqueue(user, q, 2)


def _scrape_queries(client) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get("/metrics")
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_twenty_queues_cost_the_queries_of_two(client, admin_user):
    qt = qs.queue_table_create(
        user=admin_user, name="QT_MANY", sort_order="enq_time", multiple_consumers=True
    )
    _grow(admin_user, qt, 0, 2)
    client.get("/metrics")  # the first read creates the maintenance row (jobs.selectors)
    few = _scrape_queries(client)
    _grow(admin_user, qt, 2, 20)

    many = _scrape_queries(client)

    assert "Q19" in client.get("/metrics").content.decode()
    assert many == few
    assert few <= 12  # a few per group of families, none per object
