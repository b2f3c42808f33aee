"""Commit-time queues (spec/queues.md §1.2): one commit sequence per transaction, taken at COMMIT,
and no message visible to dequeue or browse before its place in the order is final."""

from __future__ import annotations

import threading
import time

from queues import engine
from queues.models import Message

from .helpers import LIVE, browse, info, make_queue, msg, payloads, raw


def e1_e2_e3(queue, rounds: int = 1) -> list[list[str]]:
    """Figure 3-1: T1 enqueues e1; T2 enqueues e2 and commits; T1 enqueues e3 and commits.
    Returns the dequeue order of each round."""
    orders = []
    with raw() as t1, raw() as t2, raw() as reader:
        q1, q2, qr = info(t1, queue), info(t2, queue), info(reader, queue)
        for _ in range(rounds):
            engine.enqueue(t1, q1, [msg("e1")])
            engine.enqueue(t2, q2, [msg("e2")])
            t2.commit()
            engine.enqueue(t1, q1, [msg("e3")])
            t1.commit()
            orders.append(payloads(engine.dequeue(reader, qr, batch=10)))
            reader.commit()
    return orders


@LIVE
def test_the_seed_example_dequeues_e2_e1_e3_on_a_commit_time_queue(admin_user):
    queue = make_queue(admin_user, "CT", sort_order="commit_time")
    assert e1_e2_e3(queue, rounds=200) == [["e2", "e1", "e3"]] * 200


@LIVE
def test_the_seed_example_dequeues_e1_e2_e3_on_an_enq_time_queue(admin_user):
    # The dependency violation commit-time ordering exists to prevent: e3 before e2 is possible.
    queue = make_queue(admin_user, "ET", sort_order="enq_time")
    assert e1_e2_e3(queue) == [["e1", "e2", "e3"]]


@LIVE
def test_the_seed_example_keeps_its_order_within_one_priority(admin_user):
    queue = make_queue(admin_user, "PCT", sort_order="priority,commit_time")
    assert e1_e2_e3(queue, rounds=20) == [["e2", "e1", "e3"]] * 20


def _waits_for_advisory_lock(pid: int | None) -> bool:
    if pid is None:
        return False
    with raw() as conn:
        return conn.execute(
            "SELECT count(*) > 0 FROM pg_locks WHERE pid = %s AND locktype = 'advisory' "
            "AND NOT granted",
            (pid,),
        ).fetchone()[0]


def _stalled_commit(queue, finish: str) -> tuple[list[str], list[str], list[str]]:
    """T1 enqueues and fires the deferred trigger early (SET CONSTRAINTS ALL IMMEDIATE): it holds
    the commit-order lock and its number, like a transaction stuck inside COMMIT. T2 enqueues
    and commits. Returns what a browser saw while T1 stalled, while T2 was also committing, and
    after T1 finished with ``finish`` (commit or rollback)."""
    t2_done = threading.Event()
    t2_pid: list[int] = []
    with raw() as t1, raw() as viewer:
        viewer.autocommit = True
        engine.enqueue(t1, info(t1, queue), [msg("t1-a"), msg("t1-b")])
        t1.execute("SET CONSTRAINTS ALL IMMEDIATE")
        seen_stalled = payloads(browse(viewer, queue))

        def t2() -> None:
            with raw() as conn:
                t2_pid.append(conn.info.backend_pid)
                engine.enqueue(conn, info(conn, queue), [msg("t2")])
                conn.commit()
            t2_done.set()

        thread = threading.Thread(target=t2)
        thread.start()
        deadline = time.monotonic() + 10
        pid = lambda: t2_pid[0] if t2_pid else None  # noqa: E731
        while not _waits_for_advisory_lock(pid()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _waits_for_advisory_lock(pid()), "T2's COMMIT should wait for T1's order lock"
        assert not t2_done.is_set()
        seen_both_committing = payloads(browse(viewer, queue))
        assert engine.dequeue(viewer, info(viewer, queue), batch=10) == []
        getattr(t1, finish)()
        thread.join(timeout=10)
        assert t2_done.is_set()
        seen_after = payloads(browse(viewer, queue))
    return seen_stalled, seen_both_committing, seen_after


@LIVE
def test_a_commit_waits_for_an_earlier_commit_still_in_progress_and_comes_after_it(admin_user):
    queue = make_queue(admin_user, "CT", sort_order="commit_time")
    stalled, both, after = _stalled_commit(queue, "commit")
    assert stalled == []
    assert both == []
    assert after == ["t1-a", "t1-b", "t2"]
    seqs = dict(Message.objects.filter(queue=queue).values_list("payload", "commit_seq"))
    assert seqs["t1-a"] == seqs["t1-b"] < seqs["t2"]


@LIVE
def test_a_commit_blocked_behind_one_that_rolls_back_then_becomes_visible_alone(admin_user):
    queue = make_queue(admin_user, "CT", sort_order="commit_time")
    stalled, both, after = _stalled_commit(queue, "rollback")
    assert stalled == both == []
    assert after == ["t2"]


@LIVE
def test_enq_time_queues_take_no_commit_order_lock(admin_user):
    queue = make_queue(admin_user, "ET", sort_order="enq_time")
    with raw() as t1, raw() as t2:
        engine.enqueue(t1, info(t1, queue), [msg("t1")])
        t1.execute("SET CONSTRAINTS ALL IMMEDIATE")
        engine.enqueue(t2, info(t2, queue), [msg("t2")])
        t2.commit()  # would block here if enq_time messages went through the commit-order lock
        assert payloads(browse(t2, queue)) == ["t2"]
        t1.commit()
        assert payloads(browse(t2, queue)) == ["t1", "t2"]


@LIVE
def test_a_commit_time_enqueuer_does_not_see_its_own_messages_before_commit(admin_user):
    # Their place in the order is not known until COMMIT, not even to the enqueuing session.
    queue = make_queue(admin_user, "CT", sort_order="commit_time")
    with raw() as t1:
        engine.enqueue(t1, info(t1, queue), [msg("mine")])
        assert browse(t1, queue) == []
        assert engine.dequeue(t1, info(t1, queue)) == []
        t1.commit()
        assert payloads(browse(t1, queue)) == ["mine"]
