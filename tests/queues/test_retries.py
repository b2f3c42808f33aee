"""A rolled-back dequeue counts an attempt; retry_delay defers the next one; past max_retries the
message moves to the queue's exception queue with its reason."""

from __future__ import annotations

import time

import pytest

from queues import engine, services
from queues.models import Message

from .helpers import LIVE, make_queue, payloads, put, row, take


class HandlerFailed(Exception):
    pass


def fail(_message) -> None:
    raise HandlerFailed


def process_failing(queue, user, **request) -> None:
    with pytest.raises(HandlerFailed):
        services.message_process(
            user=user, queue=queue, handler=fail, request=services.DequeueRequest(**request)
        )


def exception_queue(queue):
    queue.refresh_from_db()
    return queue.exception_queue


def test_a_handler_that_succeeds_consumes_the_message(admin_user, queue):
    put(queue, "a", user=admin_user)
    seen = []
    got = services.message_process(user=admin_user, queue=queue, handler=seen.append)
    assert got.payload == "a"
    assert payloads(seen) == ["a"]
    assert not Message.objects.filter(queue=queue).exists()


def test_processing_an_empty_queue_returns_none(admin_user, queue):
    assert services.message_process(user=admin_user, queue=queue, handler=fail) is None


def test_a_rolled_back_dequeue_counts_an_attempt_and_leaves_the_message_ready(admin_user, queue):
    [mid] = put(queue, "a", user=admin_user)
    process_failing(queue, admin_user)
    assert row(mid).state == "READY"
    assert row(mid).attempts == 1
    [again] = take(queue, user=admin_user)
    assert again.id == mid
    assert again.attempts == 1


def test_after_max_retries_the_message_moves_to_the_exception_queue_with_its_reason(admin_user):
    queue = make_queue(admin_user, "RETRY2", max_retries=2)
    [mid] = put(queue, "poison", user=admin_user)
    for attempt in (1, 2):
        process_failing(queue, admin_user)
        assert row(mid).queue_id == queue.pk
        assert row(mid).attempts == attempt
    process_failing(queue, admin_user)
    moved = row(mid)
    exq = exception_queue(queue)
    assert moved.queue_id == exq.pk
    assert moved.state == "EXPIRED"
    assert moved.exception_reason == engine.REASON_MAX_RETRIES
    assert moved.original_queue_id == queue.pk
    assert moved.attempts == 3
    assert take(queue, user=admin_user) == []
    [got] = take(exq, user=admin_user)
    assert got.payload == "poison"
    assert got.exception_reason == engine.REASON_MAX_RETRIES
    assert got.original_queue_id == queue.pk


def test_max_retries_zero_moves_the_message_on_its_first_failure(admin_user):
    queue = make_queue(admin_user, "RETRY0", max_retries=0)
    [mid] = put(queue, "poison", user=admin_user)
    process_failing(queue, admin_user)
    assert row(mid).queue_id == exception_queue(queue).pk


def test_a_named_exception_queue_receives_the_failed_message(admin_user, queue_table):
    exq = services.queue_create(
        user=admin_user, name="ORDERS_ERRORS", queue_table=queue_table, kind="EXCEPTION_QUEUE"
    )
    queue = services.queue_create(
        user=admin_user,
        name="ORDERS2",
        queue_table=queue_table,
        exception_queue=exq,
        max_retries=0,
    )
    [mid] = put(queue, "poison", user=admin_user)
    process_failing(queue, admin_user)
    assert row(mid).queue_id == exq.pk


def test_a_failed_release_past_max_retries_moves_the_message(admin_user):
    queue = make_queue(admin_user, "RETRYL", max_retries=1)
    [mid] = put(queue, "poison", user=admin_user)
    for _ in range(2):
        [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
        services.message_release(
            user=admin_user, queue=queue, msgid=mid, lock_token=str(leased.lock_token)
        )
    assert row(mid).queue_id == exception_queue(queue).pk
    assert row(mid).exception_reason == engine.REASON_MAX_RETRIES


@LIVE
def test_retry_delay_holds_a_failed_message_waiting_until_the_monitor_finds_it_due(admin_user):
    queue = make_queue(admin_user, "RETRYD", retry_delay=1.0)
    [mid] = put(queue, "a", user=admin_user)
    process_failing(queue, admin_user)
    assert row(mid).state == "WAITING"
    assert row(mid).attempts == 1
    assert take(queue, user=admin_user) == []
    assert services.queue_monitor_run().made_ready == 0
    time.sleep(1.2)
    assert services.queue_monitor_run().made_ready == 1
    assert row(mid).state == "READY"
    assert [m.id for m in take(queue, user=admin_user)] == [mid]


def _multi(user, name: str, **queue_kw):
    queue = make_queue(user, name, multiple_consumers=True, **queue_kw)
    services.subscriber_add(user=user, queue=queue, name="A")
    services.subscriber_add(user=user, queue=queue, name="B")
    return queue


def test_a_subscribers_rolled_back_dequeue_counts_only_for_that_subscriber(admin_user):
    queue = _multi(admin_user, "MCRETRY", max_retries=1)
    [mid] = put(queue, "m", user=admin_user)
    process_failing(queue, admin_user, consumer_name="A")
    attempts = dict(
        Message.objects.get(pk=mid).consumers.values_list("subscriber__name", "attempts")
    )
    assert attempts == {"A": 1, "B": 0}
    process_failing(queue, admin_user, consumer_name="A")
    # A's copy went to the exception queue; B still gets the message, and then it is done.
    copies = Message.objects.filter(queue=exception_queue(queue))
    assert [(c.original_queue_id, c.exception_reason, c.attempts) for c in copies] == [
        (queue.pk, f"{engine.REASON_MAX_RETRIES} (consumer A)", 2)  # A's own attempts
    ]
    assert take(queue, user=admin_user, consumer_name="A") == []
    assert payloads(take(queue, user=admin_user, consumer_name="B")) == ["m"]
    assert row(mid).state == "PROCESSED"
    # The copy is an ordinary exception-queue message: it can be dequeued from there.
    [copy] = take(exception_queue(queue), user=admin_user)
    assert copy.payload == "m"
    assert not Message.objects.filter(queue=exception_queue(queue)).exists()


@LIVE
def test_a_subscribers_retry_delay_defers_only_that_subscriber(admin_user):
    queue = _multi(admin_user, "MCDELAY", retry_delay=1.0)
    put(queue, "m", user=admin_user)
    process_failing(queue, admin_user, consumer_name="A")
    assert take(queue, user=admin_user, consumer_name="A") == []
    assert payloads(take(queue, user=admin_user, consumer_name="B")) == ["m"]
    time.sleep(1.2)
    [again] = take(queue, user=admin_user, consumer_name="A")
    assert again.payload == "m"
