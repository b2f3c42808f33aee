"""A queue or queue table that holds messages cannot be dropped: 409, and nothing is deleted."""

from __future__ import annotations

from queues.models import Message, Queue, QueueTable


def test_deleting_a_queue_with_messages_is_a_409(admin_api, queue, enqueue_some, snapshot):
    enqueue_some(queue, {"n": 1})
    before = snapshot()

    response = admin_api.delete("/api/queues/ORDERS/")

    assert response.status_code == 409, response.content
    assert "purge" in response.json()["detail"].lower()
    before.assert_unchanged()


def test_deleting_a_queue_table_with_messages_is_a_409(admin_api, queue, enqueue_some, snapshot):
    enqueue_some(queue, {"n": 1})
    before = snapshot()

    response = admin_api.delete("/api/queue-tables/QT_ORDERS/")

    assert response.status_code == 409, response.content
    assert "QT_ORDERS" in response.json()["detail"]
    before.assert_unchanged()
    assert Queue.objects.filter(queue_table__name="QT_ORDERS").count() == 2


def test_deleting_a_queue_whose_messages_wait_in_the_exception_queue_is_a_409(
    admin_api, expired_message, snapshot
):
    before = snapshot()

    response = admin_api.delete("/api/queues/RETRY_ONCE/")

    assert response.status_code == 409, response.content
    before.assert_unchanged()


def test_deleting_an_exception_queue_other_queues_use_is_a_409(admin_api, queue, snapshot):
    before = snapshot()

    response = admin_api.delete("/api/queues/AQ$_QT_ORDERS_E/")

    assert response.status_code == 409, response.content
    assert "ORDERS" in response.json()["detail"]
    before.assert_unchanged()


def test_a_queue_emptied_by_a_purge_can_be_dropped(admin_api, queue, enqueue_some):
    enqueue_some(queue, {"n": 1}, {"n": 2})

    purge = admin_api.post("/api/queues/ORDERS/purge/", {"all": True}, format="json")
    drop = admin_api.delete("/api/queues/ORDERS/")

    assert (purge.status_code, drop.status_code) == (200, 204)
    assert not Queue.objects.filter(name="ORDERS").exists()
    assert not Message.objects.exists()


def test_an_empty_queue_table_with_only_its_exception_queue_can_be_dropped(admin_api, admin_user):
    admin_api.post("/api/queue-tables/", {"name": "QT_EMPTY", "sort_order": "enq_time"})

    response = admin_api.delete("/api/queue-tables/QT_EMPTY/")

    assert response.status_code == 204, response.content
    assert not QueueTable.objects.filter(name="QT_EMPTY").exists()
    assert not Queue.objects.filter(name="AQ$_QT_EMPTY_E").exists()


def test_an_empty_queue_table_is_dropped_with_all_its_queues(admin_api, queue, multi_queue):
    response = admin_api.delete("/api/queue-tables/QT_MULTI/")

    assert response.status_code == 204, response.content
    assert not QueueTable.objects.filter(name="QT_MULTI").exists()
    assert not Queue.objects.filter(queue_table__name="QT_MULTI").exists()
    assert Queue.objects.filter(name="ORDERS").exists()
