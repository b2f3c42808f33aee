"""The Parallel queues pages: list, create (errors on the form's field), detail with the mapping
and the balance view, purpose edit, rebuild and drop, all through the services."""

from __future__ import annotations

import pytest

from parallel.models import LogicalQueue
from parallel.services import logical_queue_create
from queues import engine
from queues import services as qs

from .conftest import up

pytestmark = pytest.mark.django_db


def test_create_list_and_detail(admin_client, three_instances):
    r = admin_client.post(
        "/queues/parallel/add/",
        {"name": "ORDERS", "partitions": "3", "sort_order": "enq_time", "instances": ""},
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    lq = LogicalQueue.objects.get()
    assert r["Location"] == f"/queues/parallel/{lq.pk}/"

    listing = admin_client.get("/queues/parallel/?q=orders_p2").content.decode()
    assert "ORDERS" in listing and "Parallel queues" in listing

    qs.message_enqueue(
        user=None,
        queue="ORDERS_P1",
        messages=[engine.NewMessage(payload=i) for i in range(4)],
    )
    page = admin_client.get(f"/queues/parallel/{lq.pk}/?instance=n2").content.decode()
    assert 'data-partition="ORDERS_P3"' in page
    assert "estimates" in page
    assert "least loaded on n2" in page
    assert "imbalanced" in page and "unbounded" in page


def test_bad_create_shows_the_error_on_the_field(admin_client, three_instances):
    r = admin_client.post(
        "/queues/parallel/add/", {"name": "ORDERS", "partitions": "0", "sort_order": "enq_time"}
    )
    assert r.status_code == 400
    assert "1 to 256 partitions" in r.content.decode()
    assert not LogicalQueue.objects.exists()


def test_purpose_rebuild_and_drop(admin_client, admin_user, three_instances):
    lq = logical_queue_create(user=admin_user, name="ORDERS", partitions=3)
    part = lq.partitions.get(position=2)
    r = admin_client.post(f"/queues/parallel/partitions/{part.pk}/purpose/", {"purpose": "VIP"})
    assert r.status_code == 302
    part.refresh_from_db()
    assert part.purpose == "VIP"

    up("n4")
    r = admin_client.post(f"/queues/parallel/{lq.pk}/rebuild/", {"instances": ""}, follow=True)
    assert "Ring rebuilt over" in r.content.decode()
    assert lq.partitions.get(position=3).queue.queue_table.secondary_instance.name == "n4"

    r = admin_client.post(f"/queues/parallel/{lq.pk}/delete/")
    assert r.status_code == 302 and not LogicalQueue.objects.exists()


def test_a_monitor_sees_the_page_but_cannot_rebuild(monitor_client, admin_user, three_instances):
    lq = logical_queue_create(user=admin_user, name="ORDERS", partitions=3)
    assert monitor_client.get(f"/queues/parallel/{lq.pk}/").status_code == 200
    assert monitor_client.post(f"/queues/parallel/{lq.pk}/rebuild/").status_code == 403
