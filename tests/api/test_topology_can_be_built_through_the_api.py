"""Queue tables and queues are created, read, edited and dropped through the API."""

from __future__ import annotations

import pytest

from queues.models import Queue, QueueTable


def test_it_creates_a_queue_table_and_its_exception_queue(admin_api):
    response = admin_api.post(
        "/api/queue-tables/",
        {"name": "QT_PAY", "sort_order": "priority", "multiple_consumers": True, "comment": "c"},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["sort_order"], body["multiple_consumers"], body["owner"]) == (
        "QT_PAY",
        "priority",
        True,
        "alice",
    )
    assert Queue.objects.get(name="AQ$_QT_PAY_E").kind == "EXCEPTION_QUEUE"


def test_it_creates_a_typed_queue_table_with_a_schema(admin_api):
    schema = {"type": "object", "required": ["id"]}

    response = admin_api.post(
        "/api/queue-tables/",
        {"name": "QT_T", "sort_order": "enq_time", "payload_type": "EVT", "payload_schema": schema},
        format="json",
    )

    assert response.status_code == 201, response.content
    assert QueueTable.objects.get(name="QT_T").payload_schema == schema


def test_it_creates_a_queue_that_defaults_to_the_tables_exception_queue(admin_api, queue_table):
    response = admin_api.post(
        "/api/queues/",
        {"name": "PAYMENTS", "queue_table": "QT_ORDERS", "max_retries": 2, "retry_delay": 1.5},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["exception_queue"], body["max_retries"], body["retry_delay"]) == (
        "AQ$_QT_ORDERS_E",
        2,
        1.5,
    )
    assert (body["depth_ready"], body["enqueued"], body["dequeued"]) == (0, 0, 0)


def test_queues_are_addressed_by_name_or_id_case_insensitively(admin_api, queue):
    by_id = admin_api.get(f"/api/queues/{queue.pk}/").json()
    by_name = admin_api.get("/api/queues/orders/").json()

    assert by_id == by_name
    assert by_id["queue_table"] == "QT_ORDERS"


def test_it_edits_a_queue(admin_api, queue):
    response = admin_api.patch(
        "/api/queues/ORDERS/",
        {"max_retries": 0, "retention_time": 60, "comment": "edited"},
        format="json",
    )

    assert response.status_code == 200, response.content
    queue.refresh_from_db()
    assert (queue.max_retries, queue.retention_time, queue.comment) == (0, 60, "edited")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sort_order": "priority"}, "sort_order"),
        ({"multiple_consumers": True}, "multiple_consumers"),
        ({"secure": True}, "secure"),
        ({"payload_type": "ORDER"}, "payload_type"),
        ({"name": "QT_RENAMED"}, "name"),
    ],
)
def test_the_fixed_properties_of_a_queue_table_cannot_be_edited(
    admin_api, queue_table, snapshot, body, field
):
    before = snapshot()

    response = admin_api.patch("/api/queue-tables/QT_ORDERS/", body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()
    before.assert_unchanged()


def test_resending_the_fixed_properties_unchanged_is_fine(admin_api, queue_table):
    response = admin_api.patch(
        "/api/queue-tables/QT_ORDERS/",
        {"name": "QT_ORDERS", "sort_order": "enq_time", "comment": "same table"},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["comment"] == "same table"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "RENAMED"}, "name"),
        ({"queue_table": "QT_OTHER"}, "queue_table"),
        ({"kind": "EXCEPTION_QUEUE"}, "kind"),
    ],
)
def test_the_fixed_properties_of_a_queue_cannot_be_edited(admin_api, queue, snapshot, body, field):
    admin_api.post("/api/queue-tables/", {"name": "QT_OTHER", "sort_order": "enq_time"})
    before = snapshot()

    response = admin_api.patch("/api/queues/ORDERS/", body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()
    before.assert_unchanged()


def test_the_queue_list_shows_depth_per_state_oldest_message_and_counters(
    admin_api, queue, enqueue_some
):
    enqueue_some(queue, 1, 2, 3)
    enqueue_some(queue, 4, delay=3600)
    admin_api.post("/api/queues/ORDERS/dequeue/", {}, format="json")

    [row] = [r for r in admin_api.get("/api/queues/").json()["results"] if r["name"] == "ORDERS"]

    assert (row["depth_ready"], row["depth_waiting"], row["depth_processed"]) == (2, 1, 0)
    assert (row["enqueued"], row["dequeued"]) == (4, 1)
    assert row["oldest_ready"] is not None


def test_the_queue_list_filters_and_sorts_with_the_shared_filterset(admin_api, queue, enqueue_some):
    enqueue_some(queue, 1)

    normal = admin_api.get("/api/queues/?kind=NORMAL_QUEUE").json()["results"]
    searched = admin_api.get("/api/queues/?q=aq$").json()["results"]
    by_depth = admin_api.get("/api/queues/?ordering=-depth_ready").json()["results"]

    assert [r["name"] for r in normal] == ["ORDERS"]
    assert [r["name"] for r in searched] == ["AQ$_QT_ORDERS_E"]
    assert by_depth[0]["name"] == "ORDERS"


def test_the_queue_list_is_paged(admin_api, admin_user, queue_table):
    from queues import services

    for i in range(5):
        services.queue_create(user=admin_user, name=f"Q{i}", queue_table=queue_table)

    page = admin_api.get("/api/queues/?limit=2&offset=2&ordering=name").json()

    assert page["count"] == 6
    assert [r["name"] for r in page["results"]] == ["Q1", "Q2"]
