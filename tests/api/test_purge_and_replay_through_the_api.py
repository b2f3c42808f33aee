"""Purge by condition or everything (with all=true); replay from the exception queue."""

from __future__ import annotations

from queues import engine, services
from queues.models import Message


def test_purge_by_correlation_leaves_the_rest(operator_api, queue, enqueue_some):
    enqueue_some(queue, 1, correlation="drop-1")
    enqueue_some(queue, 2, correlation="drop-2")
    enqueue_some(queue, 3, correlation="keep")

    response = operator_api.post(
        "/api/queues/ORDERS/purge/", {"correlation": "drop%"}, format="json"
    )

    assert response.json() == {"count": 2}
    assert list(Message.objects.values_list("payload", flat=True)) == [3]


def test_purge_by_state(operator_api, queue, enqueue_some):
    enqueue_some(queue, 1)
    enqueue_some(queue, 2, delay=3600)

    response = operator_api.post(
        "/api/queues/ORDERS/purge/", {"states": ["WAITING"]}, format="json"
    )

    assert response.json() == {"count": 1}
    assert list(Message.objects.values_list("state", flat=True)) == ["READY"]


def test_purge_by_ids(operator_api, queue, enqueue_some):
    ids = enqueue_some(queue, 1, 2, 3)

    response = operator_api.post("/api/queues/ORDERS/purge/", {"ids": ids[:2]}, format="json")

    assert response.json() == {"count": 2}
    assert list(Message.objects.values_list("id", flat=True)) == ids[2:]


def test_purge_all_with_confirmation(operator_api, queue, enqueue_some):
    enqueue_some(queue, 1, 2, 3)

    response = operator_api.post("/api/queues/ORDERS/purge/", {"all": True}, format="json")

    assert response.json() == {"count": 3}
    assert not Message.objects.exists()


def test_purge_touches_only_its_own_queue(admin_api, admin_user, queue, queue_table, enqueue_some):
    other = services.queue_create(user=admin_user, name="OTHER", queue_table=queue_table)
    enqueue_some(queue, 1)
    enqueue_some(other, 2)

    admin_api.post("/api/queues/ORDERS/purge/", {"all": True}, format="json")

    assert list(Message.objects.values_list("queue__name", flat=True)) == ["OTHER"]


def test_replay_of_chosen_ids(operator_api, expired_message):
    source, exq, mid = expired_message

    response = operator_api.post(f"/api/queues/{exq.name}/replay/", {"ids": [mid]}, format="json")

    assert response.json() == {"count": 1}
    msg = Message.objects.get(pk=mid)
    assert (msg.queue_id, msg.state, msg.replayed, msg.attempts) == (source.pk, "READY", True, 0)


def test_replay_of_everything_then_dequeue_again(operator_api, admin_user, expired_message):
    source, exq, mid = expired_message

    replay = operator_api.post(f"/api/queues/{exq.name}/replay/", {}, format="json")
    got = operator_api.post(f"/api/queues/{source.name}/dequeue/", {}, format="json")

    assert replay.json() == {"count": 1}
    assert [m["id"] for m in got.json()["messages"]] == [mid]


def test_the_exception_queue_shows_why_a_message_is_there(monitor_api, expired_message):
    source, exq, mid = expired_message

    [row] = monitor_api.get(f"/api/queues/{exq.name}/messages/").json()["results"]

    assert (row["id"], row["state"], row["original_queue"]) == (mid, "EXPIRED", source.name)
    assert row["exception_reason"] == engine.REASON_MAX_RETRIES
