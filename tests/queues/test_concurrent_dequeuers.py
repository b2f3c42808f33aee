"""Concurrent dequeuers, each on its own connection, never receive the same message, and together
they consume every message exactly once."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

from queues import engine, services
from queues.models import Message

from .helpers import LIVE, info, make_queue, msg, raw, run_threads

CONSUMERS = 4


def _fill(queue, count: int) -> list[int]:
    with raw() as conn:
        ids = engine.enqueue(conn, info(conn, queue), [msg({"n": i}) for i in range(count)])
        conn.commit()
    return ids


def _consume(
    queue, *, batch: int = 1, mode: str = engine.REMOVE, rollback_rate: float = 0.0, seed: int = 0
) -> list[int]:
    """Dequeue until the queue looks empty, one transaction per dequeue; return committed ids."""
    rnd = random.Random(seed)
    taken: list[int] = []
    with raw() as conn:
        q = info(conn, queue)
        while True:
            got = engine.dequeue(conn, q, mode=mode, batch=batch)
            if not got:
                conn.rollback()
                # SKIP LOCKED hides rows another consumer holds; look again before giving up
                # in case that consumer rolled back.
                if rollback_rate and _left(conn, q):
                    continue
                return taken
            if mode == engine.LOCKED:
                for m in got:
                    engine.ack(conn, q, m.id, m.lock_token)
            if rnd.random() < rollback_rate:
                conn.rollback()
                continue
            conn.commit()
            taken.extend(m.id for m in got)


def _left(conn, q) -> bool:
    found = conn.execute("SELECT exists(SELECT 1 FROM aq_message WHERE queue_id = %s)", (q.id,))
    left = found.fetchone()[0]
    conn.rollback()
    return left


def _assert_exactly_once(ids: list[int], per_consumer: list[list[int]]) -> None:
    everything = [i for part in per_consumer for i in part]
    duplicates = [i for i, n in Counter(everything).items() if n > 1]
    assert duplicates == []
    assert sorted(everything) == sorted(ids)


@pytest.mark.parametrize("sort_order", ["enq_time", "commit_time"])
@LIVE
def test_four_consumers_dequeue_two_thousand_messages_each_exactly_once(admin_user, sort_order):
    queue = make_queue(admin_user, "FOUR", sort_order=sort_order)
    ids = _fill(queue, 2000)
    per_consumer = run_threads(*[(lambda: _consume(queue)) for _ in range(CONSUMERS)])
    _assert_exactly_once(ids, per_consumer)
    assert all(per_consumer), "every consumer should have had a share"
    assert not Message.objects.filter(queue=queue).exists()


@LIVE
def test_concurrent_batch_dequeuers_never_overlap(admin_user):
    queue = make_queue(admin_user, "BATCHES")
    ids = _fill(queue, 2000)
    per_consumer = run_threads(*[(lambda: _consume(queue, batch=25)) for _ in range(CONSUMERS)])
    _assert_exactly_once(ids, per_consumer)


@LIVE
def test_concurrent_locked_dequeuers_never_share_a_lease(admin_user):
    queue = make_queue(admin_user, "LEASED")
    ids = _fill(queue, 600)
    per_consumer = run_threads(
        *[(lambda: _consume(queue, batch=10, mode=engine.LOCKED)) for _ in range(CONSUMERS)]
    )
    _assert_exactly_once(ids, per_consumer)


@LIVE
def test_consumers_that_sometimes_roll_back_still_consume_every_message_once(admin_user):
    # A rolled-back dequeue (a crashed consumer) leaves the message where it was.
    queue = make_queue(admin_user, "FLAKY")
    ids = _fill(queue, 800)
    per_consumer = run_threads(
        *[(lambda s=s: _consume(queue, rollback_rate=0.2, seed=s)) for s in range(CONSUMERS)]
    )
    _assert_exactly_once(ids, per_consumer)


@LIVE
def test_consumers_waiting_on_a_queue_fed_by_concurrent_producers_lose_and_duplicate_nothing(
    admin_user,
):
    queue = make_queue(admin_user, "FEED")
    producers, per_producer = 2, 400
    produced: list[list[int]] = [[] for _ in range(producers)]
    consumed_count = 0
    lock = threading.Lock()
    total = producers * per_producer

    def produce(p: int) -> None:
        with raw() as conn:
            q = info(conn, queue)
            for i in range(0, per_producer, 4):
                produced[p].extend(engine.enqueue(conn, q, [msg(i + k) for k in range(4)]))
                conn.commit()

    def consume() -> list[int]:
        nonlocal consumed_count
        taken: list[int] = []
        listener = engine.Listener(services.conninfo())
        deadline = time.monotonic() + 60
        try:
            with raw() as conn:
                q = info(conn, queue)
                while time.monotonic() < deadline:
                    with lock:
                        if consumed_count >= total:
                            return taken
                    got = engine.dequeue(conn, q, wait=0.5, listener=listener)
                    conn.commit()
                    with lock:
                        consumed_count += len(got)
                    taken.extend(m.id for m in got)
        finally:
            listener.close()
        return taken

    results = run_threads(
        *[(lambda: consume()) for _ in range(CONSUMERS)],
        *[(lambda p=p: produce(p)) for p in range(producers)],
    )
    ids = [i for part in produced for i in part]
    assert len(ids) == total
    _assert_exactly_once(ids, results[:CONSUMERS])
