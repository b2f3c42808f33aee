"""A dequeue with a wait blocks on the queue's LISTEN channel until an enqueue commits."""

from __future__ import annotations

import threading
import time

from queues import engine

from .helpers import LIVE, info, make_queue, msg, payloads, put, raw, take


def enqueue_later(queue, payload, delay: float = 0.5) -> threading.Thread:
    def go() -> None:
        time.sleep(delay)
        with raw() as conn:
            engine.enqueue(conn, info(conn, queue), [msg(payload)])
            conn.commit()

    thread = threading.Thread(target=go)
    thread.start()
    return thread


@LIVE
def test_a_waiting_dequeue_returns_as_soon_as_another_session_commits_an_enqueue(admin_user):
    queue = make_queue(admin_user, "WAITQ")
    thread = enqueue_later(queue, "late")
    started = time.monotonic()
    got = take(queue, user=admin_user, wait=8)
    elapsed = time.monotonic() - started
    thread.join()
    assert payloads(got) == ["late"]
    assert 0.3 < elapsed < 6


@LIVE
def test_a_waiting_dequeue_on_a_commit_time_queue_wakes_on_commit(admin_user):
    queue = make_queue(admin_user, "WAITCT", sort_order="commit_time")
    thread = enqueue_later(queue, "late")
    started = time.monotonic()
    got = take(queue, user=admin_user, wait=8)
    thread.join()
    assert payloads(got) == ["late"]
    assert time.monotonic() - started < 6


@LIVE
def test_a_waiting_dequeue_returns_nothing_after_its_timeout(admin_user):
    queue = make_queue(admin_user, "WAITQ")
    started = time.monotonic()
    assert take(queue, user=admin_user, wait=1) == []
    assert time.monotonic() - started >= 0.9


@LIVE
def test_an_enqueue_on_another_queue_does_not_end_the_wait_with_its_message(admin_user):
    queue = make_queue(admin_user, "WAITQ")
    other = make_queue(admin_user, "NOISE")
    thread = enqueue_later(other, "noise", delay=0.2)
    assert take(queue, user=admin_user, wait=1.2) == []
    thread.join()
    assert payloads(take(other, user=admin_user)) == ["noise"]


@LIVE
def test_a_waiting_dequeue_takes_a_message_already_there_at_once(admin_user):
    queue = make_queue(admin_user, "WAITQ")
    put(queue, "here", user=admin_user)
    started = time.monotonic()
    assert payloads(take(queue, user=admin_user, wait=8)) == ["here"]
    assert time.monotonic() - started < 4


@LIVE
def test_an_uncommitted_enqueue_does_not_satisfy_a_wait_until_it_commits(admin_user):
    queue = make_queue(admin_user, "WAITQ")
    committed = threading.Event()

    def slow_commit() -> None:
        with raw() as conn:
            engine.enqueue(conn, info(conn, queue), [msg("slow")])
            time.sleep(1.0)
            committed.set()
            conn.commit()

    thread = threading.Thread(target=slow_commit)
    thread.start()
    got = take(queue, user=admin_user, wait=8)
    thread.join()
    assert payloads(got) == ["slow"]
    assert committed.is_set()


@LIVE
def test_waiting_engine_dequeue_needs_a_listener(admin_user):
    import pytest

    queue = make_queue(admin_user, "WAITQ")
    with raw() as conn, pytest.raises(engine.InvalidMessage) as err:
        engine.dequeue(conn, info(conn, queue), wait=1)
    assert err.value.field == "wait"
