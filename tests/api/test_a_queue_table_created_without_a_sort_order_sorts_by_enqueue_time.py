"""A queue table created without ``sort_order`` sorts by enqueue time, as
DBMS_AQADM.CREATE_QUEUE_TABLE's ``sort_list`` defaults; the API, the pages and the service agree."""

from __future__ import annotations

from queues import services
from queues.models import QueueTable


def test_the_api_creates_a_queue_table_without_a_sort_order(admin_api):
    response = admin_api.post("/api/queue-tables/", {"name": "QT1"}, format="json")

    assert response.status_code == 201, response.content
    assert response.json()["sort_order"] == "enq_time"
    assert QueueTable.objects.get(name="QT1").sort_order == "enq_time"


def test_the_service_defaults_the_sort_order_to_enqueue_time(admin_user):
    qt = services.queue_table_create(user=admin_user, name="QT2")

    assert qt.sort_order == "enq_time"
