"""Acceptance T2 and T3 (spec/queues.md §5.7): under concurrent, overlapping commits, repeated
browses with no dequeue between them never disagree. Each browse must extend the one before it
(the visible messages are always a prefix of the final order), and a transaction's messages
appear all at once. Under priority,commit_time this holds within each priority; across
priorities nothing is promised, so nothing is asserted."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

from queues import engine

from .helpers import LIVE, browse, info, make_queue, msg, raw, run_threads

ENQUEUERS = 4
DURATION_S = 6.0


def _enqueuer(queue, worker: int, stop: threading.Event, priorities: tuple[int, ...]) -> int:
    rnd = random.Random(worker)
    done = 0
    with raw() as conn:
        q = info(conn, queue)
        while not stop.is_set():
            size = rnd.randint(1, 3)
            tag = f"{worker}-{done}"
            batch = [
                msg({"tx": tag, "n": size}, priority=rnd.choice(priorities)) for _ in range(size)
            ]
            engine.enqueue(conn, q, batch)
            # Overlap commits: sometimes linger inside the transaction before committing.
            if rnd.random() < 0.3:
                time.sleep(rnd.random() / 200)
            if rnd.random() < 0.1:
                conn.rollback()
            else:
                conn.commit()
                done += 1
    return done


def _browser(queue, stop: threading.Event, by_priority: bool) -> tuple[int, list[str]]:
    """Browse over and over; return the number of browses and any inconsistencies seen."""
    problems: list[str] = []
    browses = 0
    previous: dict[int, list[int]] = defaultdict(list)
    with raw() as conn:
        conn.autocommit = True
        while not stop.is_set():
            seen = browse(conn, queue)
            browses += 1
            groups: dict[int, list[int]] = defaultdict(list)
            per_tx: dict[str, int] = defaultdict(int)
            sizes: dict[str, int] = {}
            for m in seen:
                groups[m.priority if by_priority else 0].append(m.id)
                per_tx[m.payload["tx"]] += 1
                sizes[m.payload["tx"]] = m.payload["n"]
            for key, ids in groups.items():
                before = previous[key]
                if ids[: len(before)] != before:
                    problems.append(f"browse {browses}: priority {key} is not a prefix extension")
                previous[key] = ids
            for key in previous.keys() - groups.keys():
                if previous[key]:
                    problems.append(f"browse {browses}: priority {key} lost its messages")
            torn = [tx for tx, count in per_tx.items() if count != sizes[tx]]
            if torn:
                problems.append(f"browse {browses}: transactions seen in part: {torn[:3]}")
    return browses, problems


def _run(queue, *, priorities: tuple[int, ...], by_priority: bool) -> tuple[int, int]:
    stop = threading.Event()
    results = {}

    def browser() -> None:
        results["browser"] = _browser(queue, stop, by_priority)

    def stopper() -> None:
        time.sleep(DURATION_S)
        stop.set()

    outcome = run_threads(
        browser,
        stopper,
        *[(lambda w=w: _enqueuer(queue, w, stop, priorities)) for w in range(ENQUEUERS)],
    )
    committed = sum(outcome[2:])
    browses, problems = results["browser"]
    assert problems == []
    return browses, committed


@LIVE
def test_repeated_browses_of_a_commit_time_queue_under_concurrent_commits_only_ever_grow(
    admin_user,
):
    queue = make_queue(admin_user, "T2", sort_order="commit_time")
    browses, committed = _run(queue, priorities=(1,), by_priority=False)
    assert browses > 50
    assert committed > 100
    # The final order is commit order: transactions appear whole and in commit_seq order.
    with raw() as conn:
        final = browse(conn, queue)
    positions = [(m.position.commit_seq, m.id) for m in final]
    assert positions == sorted(positions)


@LIVE
def test_repeated_browses_of_a_priority_commit_time_queue_only_ever_grow_within_a_priority(
    admin_user,
):
    queue = make_queue(admin_user, "T3", sort_order="priority,commit_time")
    browses, committed = _run(queue, priorities=(1, 2, 3), by_priority=True)
    assert browses > 50
    assert committed > 100
