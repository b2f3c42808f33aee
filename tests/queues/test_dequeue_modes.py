"""Dequeue in REMOVE, LOCKED and BROWSE modes, with leases finished by ack, release or expiry."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from queues import engine, services

from .helpers import LIVE, make_queue, payloads, put, row, states, take


def test_remove_takes_messages_in_order_and_deletes_them(admin_user, queue):
    ids = put(queue, "a", "b", "c", user=admin_user)
    assert payloads(take(queue, user=admin_user)) == ["a"]
    assert payloads(take(queue, user=admin_user, batch=5)) == ["b", "c"]
    assert take(queue, user=admin_user) == []
    assert states(queue) == {}
    assert len(ids) == 3


def test_remove_counts_enqueues_and_dequeues_in_the_persistent_queue_view(admin_user, queue):
    put(queue, 1, 2, 3, user=admin_user)
    take(queue, user=admin_user, batch=2)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT enqueued_msgs, dequeued_msgs FROM v_persistent_queues WHERE queue_id = %s",
            [queue.pk],
        )
        assert cur.fetchone() == (3, 2)


def test_browse_reads_without_removing_and_repeats(admin_user, queue):
    put(queue, "a", "b", user=admin_user)
    first = take(queue, user=admin_user, mode=engine.BROWSE, batch=10)
    second = take(queue, user=admin_user, mode=engine.BROWSE, batch=10)
    assert payloads(first) == payloads(second) == ["a", "b"]
    assert [m.lock_token for m in first] == [None, None]
    assert len(states(queue)) == 2


def test_locked_dequeue_leases_the_message_so_no_other_dequeue_gets_it(admin_user, queue):
    put(queue, "a", "b", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
    assert leased.payload == "a"
    assert leased.lock_token is not None
    assert row(leased.id).state == "READY"
    assert payloads(take(queue, user=admin_user, mode=engine.LOCKED)) == ["b"]
    assert take(queue, user=admin_user) == []


def test_ack_consumes_a_leased_message_once(admin_user, queue):
    put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
    done = services.message_ack(
        user=admin_user, queue=queue, msgid=leased.id, lock_token=str(leased.lock_token)
    )
    assert done.id == leased.id
    assert states(queue) == {}
    with pytest.raises(engine.LeaseMismatch) as err:
        services.message_ack(
            user=admin_user, queue=queue, msgid=leased.id, lock_token=str(leased.lock_token)
        )
    assert err.value.field == "lock_token"


def test_ack_with_the_wrong_token_is_refused_and_keeps_the_lease(admin_user, queue):
    put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
    with pytest.raises(engine.LeaseMismatch):
        services.message_ack(
            user=admin_user,
            queue=queue,
            msgid=leased.id,
            lock_token="00000000-0000-0000-0000-000000000000",
        )
    assert row(leased.id).lock_token == leased.lock_token


def test_release_with_failure_counts_an_attempt_and_makes_the_message_dequeueable(
    admin_user, queue
):
    put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
    services.message_release(
        user=admin_user, queue=queue, msgid=leased.id, lock_token=str(leased.lock_token)
    )
    assert row(leased.id).attempts == 1
    assert row(leased.id).lock_token is None
    [again] = take(queue, user=admin_user)
    assert again.id == leased.id
    assert again.attempts == 1


def test_release_without_failure_gives_the_message_back_without_an_attempt(admin_user, queue):
    put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
    services.message_release(
        user=admin_user,
        queue=queue,
        msgid=leased.id,
        lock_token=str(leased.lock_token),
        failed=False,
    )
    assert row(leased.id).attempts == 0
    assert [m.id for m in take(queue, user=admin_user)] == [leased.id]


def test_stopped_dequeue_refuses_remove_and_locked_but_still_browses(admin_user, queue):
    put(queue, "a", user=admin_user)
    services.queue_stop(user=admin_user, queue=queue, enqueue=False, dequeue=True)
    for mode in (engine.REMOVE, engine.LOCKED):
        with pytest.raises(engine.QueueDisabled) as err:
            take(queue, user=admin_user, mode=mode)
        assert err.value.field == "queue"
    assert payloads(take(queue, user=admin_user, mode=engine.BROWSE)) == ["a"]
    services.queue_start(user=admin_user, queue=queue)
    assert payloads(take(queue, user=admin_user)) == ["a"]


def test_an_unknown_mode_or_batch_size_is_refused_naming_the_field(admin_user, queue):
    for kw, field in (
        ({"mode": "PEEK"}, "mode"),
        ({"batch": 0}, "batch"),
        ({"navigation": "LAST"}, "navigation"),
        ({"wait": -1}, "wait"),
    ):
        with pytest.raises(engine.InvalidMessage) as err:
            take(queue, user=admin_user, **kw)
        assert err.value.field == field


@LIVE
def test_an_expired_lease_counts_an_attempt_when_the_monitor_runs(admin_user):
    queue = make_queue(admin_user, "LEASES")
    put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED, lease_seconds=1.0)
    assert services.queue_monitor_run().leases_released == 0
    time.sleep(1.3)
    report = services.queue_monitor_run()
    assert report.leases_released == 1
    assert row(leased.id).attempts == 1
    assert row(leased.id).lock_token is None
    # The old holder's token no longer finishes the message; the next dequeue gets it.
    with pytest.raises(engine.LeaseMismatch):
        services.message_ack(
            user=admin_user, queue=queue, msgid=leased.id, lock_token=str(leased.lock_token)
        )
    [again] = take(queue, user=admin_user)
    assert again.id == leased.id
    assert again.attempts == 1


@LIVE
def test_a_lease_that_has_not_run_out_is_left_alone_by_the_monitor(admin_user):
    queue = make_queue(admin_user, "LEASES")
    put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED, lease_seconds=60)
    assert services.queue_monitor_run().leases_released == 0
    assert row(leased.id).attempts == 0
    assert row(leased.id).lock_token == leased.lock_token


def test_ack_on_a_queue_with_retention_keeps_the_message_as_processed(admin_user):
    queue = make_queue(admin_user, "KEEPL", retention_time=3600)
    [mid] = put(queue, "a", user=admin_user)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED)
    services.message_ack(user=admin_user, queue=queue, msgid=mid, lock_token=str(leased.lock_token))
    assert row(mid).state == "PROCESSED"
    assert row(mid).processed_at is not None
    assert take(queue, user=admin_user) == []
