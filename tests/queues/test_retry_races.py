"""Counting a rolled-back dequeue's attempt happens after the rollback, in a transaction of its
own; by then another consumer may have leased the message. The late count must not take that
consumer's lease away (the message would be handed out twice)."""

from __future__ import annotations

import pytest

from queues import engine, services
from queues.models import Message, MessageConsumer

from .helpers import LIVE, info, make_queue, put, raw, row, take


class HandlerFailed(Exception):
    pass


def fail(_message) -> None:
    raise HandlerFailed


def lease_elsewhere(queue, consumer: str | None = None) -> engine.DequeuedMessage:
    with raw() as other:
        [leased] = engine.dequeue(other, info(other, queue), mode=engine.LOCKED, consumer=consumer)
        other.commit()
    return leased


@LIVE
def test_a_late_attempt_count_leaves_another_consumers_lease_alone(admin_user, monkeypatch):
    queue = make_queue(admin_user, "RACE")
    [mid] = put(queue, "m", user=admin_user)
    real = engine.fail_attempts
    seen: dict[str, engine.DequeuedMessage] = {}

    def interleaved(conn, ids, *args, **kw):
        # Between the rollback and the count, another consumer leases the message.
        seen["leased"] = lease_elsewhere(queue)
        return real(conn, ids, *args, **kw)

    monkeypatch.setattr(engine, "fail_attempts", interleaved)
    with pytest.raises(HandlerFailed):
        services.message_process(user=admin_user, queue=queue, handler=fail)
    monkeypatch.setattr(engine, "fail_attempts", real)

    leased = seen["leased"]
    assert leased.id == mid
    assert row(mid).lock_token == leased.lock_token
    assert take(queue, user=admin_user) == []
    services.message_ack(user=admin_user, queue=queue, msgid=mid, lock_token=str(leased.lock_token))
    assert not Message.objects.filter(pk=mid).exists()


@LIVE
def test_a_late_attempt_count_leaves_another_subscribers_lease_alone(admin_user, monkeypatch):
    queue = make_queue(admin_user, "RACEMC", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="A")
    [mid] = put(queue, "m", user=admin_user)
    real = engine.fail_consumer_attempts
    seen: dict[str, engine.DequeuedMessage] = {}

    def interleaved(conn, ids, *args, **kw):
        # Another session of the same subscriber leases the copy first.
        seen["leased"] = lease_elsewhere(queue, consumer="A")
        return real(conn, ids, *args, **kw)

    monkeypatch.setattr(engine, "fail_consumer_attempts", interleaved)
    with pytest.raises(HandlerFailed):
        services.message_process(
            user=admin_user,
            queue=queue,
            handler=fail,
            request=services.DequeueRequest(consumer_name="A"),
        )
    monkeypatch.setattr(engine, "fail_consumer_attempts", real)

    leased = seen["leased"]
    assert MessageConsumer.objects.get(message_id=mid).lock_token == leased.lock_token
    assert take(queue, user=admin_user, consumer_name="A") == []
    services.message_ack(
        user=admin_user,
        queue=queue,
        msgid=mid,
        lock_token=str(leased.lock_token),
        consumer_name="A",
    )
    assert row(mid).state == "PROCESSED"
