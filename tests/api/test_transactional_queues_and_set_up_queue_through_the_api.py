"""TRANSACTIONAL message grouping and SET_UP_QUEUE through the API: message_grouping on queue
tables, group fields on dequeued messages, group_token and NEXT_TRANSACTION, end of group as a
409, and SET_UP_QUEUE's endpoint with its refusals naming the field.

The grouping tests commit for real: every request of a test wrapped in one transaction would be
one enqueuing transaction, so one group."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from queues.models import Agent, Queue, QueueTable


def _grouped(api, name: str = "TXQ") -> None:
    made = api.post(
        "/api/queue-tables/", {"name": f"QT_{name}", "message_grouping": "TRANSACTIONAL"}
    )
    assert made.status_code == 201, made.content
    assert made.json()["message_grouping"] == "TRANSACTIONAL"
    assert api.post("/api/queues/", {"name": name, "queue_table": f"QT_{name}"}).status_code == 201


def test_a_queue_table_takes_message_grouping_and_refuses_an_unknown_one(admin_api):
    bad = admin_api.post("/api/queue-tables/", {"name": "QT_BAD", "message_grouping": "SOMETIMES"})
    plain = admin_api.post("/api/queue-tables/", {"name": "QT_PLAIN"})
    assert bad.status_code == 400 and "message_grouping" in bad.json()
    assert plain.json()["message_grouping"] == "NONE"


def test_message_grouping_cannot_be_changed_after_creation(admin_api):
    _grouped(admin_api)
    changed = admin_api.patch("/api/queue-tables/QT_TXQ/", {"message_grouping": "NONE"})
    assert changed.status_code == 400
    assert "message_grouping" in changed.json()
    assert QueueTable.objects.get(name="QT_TXQ").message_grouping == "TRANSACTIONAL"


@pytest.mark.django_db(transaction=True)
def test_dequeue_hands_out_a_group_with_its_token_and_end_of_group(admin_api):
    _grouped(admin_api)
    admin_api.post("/api/queues/TXQ/enqueue/", {"messages": [{"payload": 1}, {"payload": 2}]})
    admin_api.post("/api/queues/TXQ/enqueue/", {"messages": [{"payload": 3}]})

    first = admin_api.post("/api/queues/TXQ/dequeue/", {}).json()["messages"][0]
    token = first["group_token"]
    second = admin_api.post("/api/queues/TXQ/dequeue/", {"group_token": token}).json()
    end = admin_api.post("/api/queues/TXQ/dequeue/", {"group_token": token})
    nxt = admin_api.post("/api/queues/TXQ/dequeue/", {"navigation": "NEXT_TRANSACTION"}).json()

    place = ("payload", "group_position", "group_size", "last_in_group")
    assert tuple(first[k] for k in place) == (1, 1, 2, False)
    m = second["messages"][0]
    assert tuple(m[k] for k in place) == (2, 2, 2, True)
    assert m["transaction_group"] == first["transaction_group"]
    assert end.status_code == 409 and "group_token" in end.json(), end.json()
    assert [x["payload"] for x in nxt["messages"]] == [3]
    assert nxt["messages"][0]["transaction_group"] != first["transaction_group"]


@pytest.mark.django_db(transaction=True)
def test_browse_through_the_api_shows_groups_and_places(admin_api):
    _grouped(admin_api)
    admin_api.post("/api/queues/TXQ/enqueue/", {"messages": [{"payload": "a"}, {"payload": "b"}]})
    seen = admin_api.post("/api/queues/TXQ/dequeue/", {"mode": "BROWSE", "batch": 10}).json()
    assert [(m["group_position"], m["last_in_group"]) for m in seen["messages"]] == [
        (1, False),
        (2, True),
    ]


def test_next_transaction_on_a_queue_without_grouping_is_a_400_naming_navigation(admin_api, queue):
    got = admin_api.post("/api/queues/ORDERS/dequeue/", {"navigation": "NEXT_TRANSACTION"})
    assert got.status_code == 400 and "navigation" in got.json()


def test_set_up_queue_through_the_api_then_again_for_another_user(admin_api, operator_user):
    User.objects.create_user(username="hr", password="pw-hr")
    first = admin_api.post(
        "/api/queues/set_up_queue/",
        {"queue_table": "STRM_QT", "queue_name": "STRM_Q", "queue_user": "hr"},
    )
    again = admin_api.post(
        "/api/queues/set_up_queue/",
        {"queue_table": "STRM_QT", "queue_name": "STRM_Q", "queue_user": "oscar"},
    )
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["queue_table"]["sort_order"] == "commit_time"
    assert body["queue_table"]["message_grouping"] == "TRANSACTIONAL"
    # The same shape as GET /api/queue-tables/{id}/ (the schema's QueueTable).
    assert body["queue_table"]["queue_count"] == 2  # STRM_Q and the default exception queue
    assert (body["agent"], body["queue_created"], body["agent_created"]) == ("HR", True, True)
    assert again.status_code == 201 and again.json()["queue_created"] is False
    assert again.json()["agent"] == "OSCAR"
    assert Queue.objects.filter(name="STRM_Q").count() == 1


def test_set_up_queue_for_a_user_who_does_not_exist_is_a_400_naming_queue_user(admin_api):
    got = admin_api.post(
        "/api/queues/set_up_queue/", {"queue_table": "QT", "queue_name": "Q", "queue_user": "x"}
    )
    assert got.status_code == 400 and "queue_user" in got.json()
    assert not QueueTable.objects.filter(name="QT").exists() and not Agent.objects.exists()


def test_set_up_queue_needs_the_configure_role(operator_api):
    got = operator_api.post("/api/queues/set_up_queue/", {"queue_table": "QT", "queue_name": "Q"})
    assert got.status_code == 403
    assert not QueueTable.objects.filter(name="QT").exists()
