"""Purge removes a queue's messages by condition (state, correlation, ids, age, priority) or all."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Message, MessageConsumer

from .helpers import LIVE, info, make_queue, payloads, put, raw, take


def purge(queue, user, **condition) -> int:
    return services.queue_purge(
        user=user, queue=queue, condition=engine.PurgeCondition(**condition)
    )


def remaining(queue) -> list:
    return sorted(Message.objects.filter(queue=queue).values_list("payload", flat=True))


def test_purge_by_state_removes_only_messages_in_that_state(admin_user, queue):
    put(queue, "ready", user=admin_user)
    put(queue, "waiting", user=admin_user, delay=3600)
    assert purge(queue, admin_user, states=["WAITING"]) == 1
    assert remaining(queue) == ["ready"]


def test_purge_by_correlation_takes_wildcards(admin_user, queue):
    put(queue, "o1", user=admin_user, correlation="ORDER-1")
    put(queue, "o2", user=admin_user, correlation="ORDER-2")
    put(queue, "i1", user=admin_user, correlation="INVOICE-1")
    assert purge(queue, admin_user, correlation="ORDER-%") == 2
    assert remaining(queue) == ["i1"]


def test_purge_by_ids_removes_exactly_those(admin_user, queue):
    ids = put(queue, "a", "b", "c", user=admin_user)
    assert purge(queue, admin_user, ids=[ids[0], ids[2]]) == 2
    assert remaining(queue) == ["b"]


def test_purge_by_an_empty_id_list_removes_nothing(admin_user, queue):
    put(queue, "a", user=admin_user)
    assert purge(queue, admin_user, ids=[]) == 0
    assert remaining(queue) == ["a"]


def test_purge_by_ids_ignores_another_queues_messages(admin_user, queue):
    other = make_queue(admin_user, "OTHER")
    [theirs] = put(other, "theirs", user=admin_user)
    assert purge(queue, admin_user, ids=[theirs]) == 0
    assert remaining(other) == ["theirs"]


def test_purge_by_priority_and_age_combine(admin_user, queue):
    put(queue, "p1", user=admin_user, priority=1)
    put(queue, "p2", user=admin_user, priority=2)
    future = timezone.now() + timedelta(hours=1)
    past = timezone.now() - timedelta(hours=1)
    assert purge(queue, admin_user, priority=2, enqueued_before=past) == 0
    assert purge(queue, admin_user, priority=2, enqueued_before=future) == 1
    assert remaining(queue) == ["p1"]


def test_purge_of_all_empties_the_queue_and_leaves_other_queues_alone(admin_user, queue):
    other = make_queue(admin_user, "OTHER")
    put(queue, *range(10), user=admin_user)
    put(other, "keep", user=admin_user)
    assert purge(queue, admin_user) == 10
    assert remaining(queue) == []
    assert remaining(other) == ["keep"]


def test_purge_of_a_multi_consumer_queue_removes_the_pending_copies_too(admin_user):
    queue = make_queue(admin_user, "PUBSUB", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="A")
    services.subscriber_add(user=admin_user, queue=queue, name="B")
    put(queue, "m1", "m2", user=admin_user)
    assert purge(queue, admin_user) == 2
    assert not MessageConsumer.objects.exists()


def test_purge_of_an_exception_queue_removes_its_messages(admin_user, queue):
    [mid] = put(queue, "a", user=admin_user)
    engine.move_to_exception_queue(services.raw_connection(), [mid], "TEST")
    queue.refresh_from_db()
    assert purge(queue.exception_queue, admin_user, states=["EXPIRED"]) == 1
    assert not Message.objects.exists()


def test_purge_records_its_condition_and_count_in_the_change_log(admin_user, queue):
    put(queue, "a", "b", user=admin_user, correlation="X")
    before = ChangeLogEntry.objects.count()
    purge(queue, admin_user, correlation="X")
    assert ChangeLogEntry.objects.count() == before + 1
    entry = ChangeLogEntry.objects.first()
    assert entry.verb == "queue_purge"
    assert entry.username == admin_user.username
    assert entry.object_id == str(queue.pk)
    assert entry.before["condition"]["correlation"] == "X"
    assert entry.before["condition"]["all"] is False
    assert entry.after == {"removed": 2}


@LIVE
def test_purge_skips_a_message_a_running_dequeue_holds(admin_user):
    queue = make_queue(admin_user, "BUSY")
    put(queue, "held", "free", user=admin_user)
    with raw() as consumer:
        [held] = engine.dequeue(consumer, info(consumer, queue))
        assert purge(queue, admin_user) == 1
        consumer.rollback()
    assert payloads(take(queue, user=admin_user, batch=10)) == [held.payload]
