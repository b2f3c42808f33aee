"""Multi-consumer queues: each subscriber present at enqueue gets each message once; the message
is PROCESSED when the last of them has it, and retention keeps it for a while after."""

from __future__ import annotations

import time

import pytest

from queues import engine, services
from queues.models import Message, Subscriber

from .helpers import (
    LIVE,
    barrier,
    info,
    make_queue,
    msg,
    payloads,
    put,
    raw,
    row,
    run_threads,
    take,
)


def pubsub(user, name: str = "PUBSUB", subscribers=("A", "B"), **queue_kw):
    queue = make_queue(user, name, multiple_consumers=True, **queue_kw)
    for sub in subscribers:
        services.subscriber_add(user=user, queue=queue, name=sub)
    return queue


def test_each_subscriber_gets_each_message_once(admin_user):
    queue = pubsub(admin_user)
    put(queue, "m1", "m2", user=admin_user)
    for sub in ("A", "B"):
        assert payloads(take(queue, user=admin_user, consumer_name=sub, batch=10)) == ["m1", "m2"]
        assert take(queue, user=admin_user, consumer_name=sub) == []


def test_a_message_is_processed_only_when_every_subscriber_has_consumed_it(admin_user):
    queue = pubsub(admin_user, subscribers=("A", "B", "C"))
    [mid] = put(queue, "m", user=admin_user)
    assert row(mid).pending_consumers == 3
    take(queue, user=admin_user, consumer_name="A")
    take(queue, user=admin_user, consumer_name="C")
    assert row(mid).state == "READY"
    assert row(mid).pending_consumers == 1
    take(queue, user=admin_user, consumer_name="B")
    assert row(mid).state == "PROCESSED"
    assert row(mid).pending_consumers == 0


def test_a_subscriber_added_later_does_not_get_older_messages(admin_user):
    queue = pubsub(admin_user, subscribers=("A",))
    put(queue, "old", user=admin_user)
    services.subscriber_add(user=admin_user, queue=queue, name="LATE")
    put(queue, "new", user=admin_user)
    assert payloads(take(queue, user=admin_user, consumer_name="LATE", batch=10)) == ["new"]
    assert payloads(take(queue, user=admin_user, consumer_name="A", batch=10)) == ["old", "new"]


def test_enqueue_into_a_multi_consumer_queue_without_subscribers_fails_clearly(admin_user):
    queue = pubsub(admin_user, subscribers=())
    with pytest.raises(engine.NoSubscribers) as err:
        put(queue, "m", user=admin_user)
    assert err.value.field == "queue"
    assert "no subscribers" in err.value.message
    assert not Message.objects.filter(queue=queue).exists()


def test_a_recipient_list_sends_the_message_only_to_the_named_subscribers(admin_user):
    queue = pubsub(admin_user, subscribers=("A", "B", "C"))
    [mid] = put(queue, "for A and C", user=admin_user, recipients=["A", "c"])
    assert row(mid).pending_consumers == 2
    assert take(queue, user=admin_user, consumer_name="B") == []
    take(queue, user=admin_user, consumer_name="A")
    assert row(mid).state == "READY"
    assert payloads(take(queue, user=admin_user, consumer_name="C")) == ["for A and C"]
    assert row(mid).state == "PROCESSED"


def test_an_unknown_recipient_is_refused_naming_its_position(admin_user):
    queue = pubsub(admin_user)
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(
            user=admin_user,
            queue=queue,
            messages=[msg(1), msg(2, recipients=["A", "NOBODY"])],
        )
    assert err.value.field == "messages[1].recipients[1]"
    assert not Message.objects.filter(queue=queue).exists()


def test_locked_dequeue_by_a_subscriber_then_ack_consumes_its_copy(admin_user):
    queue = pubsub(admin_user)
    [mid] = put(queue, "m", user=admin_user)
    [leased] = take(queue, user=admin_user, consumer_name="A", mode=engine.LOCKED)
    assert take(queue, user=admin_user, consumer_name="A") == []
    services.message_ack(
        user=admin_user,
        queue=queue,
        msgid=mid,
        lock_token=str(leased.lock_token),
        consumer_name="A",
    )
    assert row(mid).pending_consumers == 1
    take(queue, user=admin_user, consumer_name="B")
    assert row(mid).state == "PROCESSED"


def test_browse_by_a_subscriber_shows_only_what_it_has_yet_to_consume(admin_user):
    queue = pubsub(admin_user)
    put(queue, "m1", "m2", user=admin_user)
    take(queue, user=admin_user, consumer_name="A")
    assert payloads(
        take(queue, user=admin_user, consumer_name="A", mode=engine.BROWSE, batch=10)
    ) == ["m2"]
    assert payloads(
        take(queue, user=admin_user, consumer_name="B", mode=engine.BROWSE, batch=10)
    ) == ["m1", "m2"]


def test_removing_a_subscriber_drops_its_pending_copies(admin_user):
    queue = pubsub(admin_user)
    [mid] = put(queue, "m", user=admin_user)
    take(queue, user=admin_user, consumer_name="A")
    services.subscriber_remove(user=admin_user, subscriber=Subscriber.objects.get(name="B"))
    assert row(mid).state == "PROCESSED"


@LIVE
def test_retention_keeps_a_processed_message_until_the_monitor_removes_it_after_the_time(
    admin_user,
):
    queue = pubsub(admin_user, retention_time=1.0)
    [mid] = put(queue, "m", user=admin_user)
    take(queue, user=admin_user, consumer_name="A")
    take(queue, user=admin_user, consumer_name="B")
    assert row(mid).state == "PROCESSED"
    assert services.queue_monitor_run().removed == 0
    assert Message.objects.filter(pk=mid).exists()
    time.sleep(1.2)
    assert services.queue_monitor_run().removed == 1
    assert not Message.objects.filter(pk=mid).exists()


@LIVE
def test_retention_on_a_single_consumer_queue_keeps_removed_messages_as_processed(admin_user):
    queue = make_queue(admin_user, "KEEP", retention_time=1.0)
    [mid] = put(queue, "m", user=admin_user)
    assert payloads(take(queue, user=admin_user)) == ["m"]
    assert row(mid).state == "PROCESSED"
    assert take(queue, user=admin_user) == []
    assert services.queue_monitor_run().removed == 0
    time.sleep(1.2)
    assert services.queue_monitor_run().removed == 1


@LIVE
def test_two_subscribers_consuming_the_same_messages_at_once_process_each_exactly_once(
    admin_user,
):
    queue = pubsub(admin_user)
    with raw() as conn:
        ids = engine.enqueue(conn, info(conn, queue), [msg(i) for i in range(300)])
        conn.commit()
    start = barrier(2)

    def consume(name: str) -> list[int]:
        taken = []
        with raw() as conn:
            q = info(conn, queue)
            start.wait()
            while got := engine.dequeue(conn, q, consumer=name):
                conn.commit()
                taken.extend(m.id for m in got)
        return taken

    a, b = run_threads(lambda: consume("A"), lambda: consume("B"))
    assert sorted(a) == sorted(b) == sorted(ids)
    done = Message.objects.filter(pk__in=ids)
    assert set(done.values_list("state", "pending_consumers")) == {("PROCESSED", 0)}
    assert done.filter(processed_at__isnull=True).count() == 0
    assert services.queue_monitor_run().removed == 300


@LIVE
def test_a_subscribers_expired_lease_counts_an_attempt_for_that_subscriber_only(admin_user):
    queue = pubsub(admin_user)
    [mid] = put(queue, "m", user=admin_user)
    [leased] = take(
        queue, user=admin_user, consumer_name="A", mode=engine.LOCKED, lease_seconds=0.3
    )
    time.sleep(0.6)
    assert services.queue_monitor_run().leases_released == 1
    attempts = dict(
        Message.objects.get(pk=mid).consumers.values_list("subscriber__name", "attempts")
    )
    assert attempts == {"A": 1, "B": 0}
    with pytest.raises(engine.LeaseMismatch):
        services.message_ack(
            user=admin_user,
            queue=queue,
            msgid=mid,
            lock_token=str(leased.lock_token),
            consumer_name="A",
        )
    assert payloads(take(queue, user=admin_user, consumer_name="A")) == ["m"]
