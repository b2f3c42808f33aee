"""The counters (aq_queue_stat) count every committed enqueue (single or batch) and every
committed dequeue exactly once, whether the statement updates this backend's counter row or has to make
it, and when a row the engine saw is gone (a rolled-back first statement made it, or it was
deleted)."""

from __future__ import annotations

import importlib

import psycopg
import pytest

from queues import engine, services
from queues.engine import sets

from .helpers import LIVE, make_queue, msg


def _counted(queue_id: int, column: str = "enqueued") -> int:
    with psycopg.connect(services.conninfo()) as c:
        row = c.execute(
            f"SELECT coalesce(sum({column}), 0) FROM aq_queue_stat WHERE queue_id = %s",
            (queue_id,),
        ).fetchone()
    return int(row[0])


def _count_missed_calls(monkeypatch) -> list[tuple]:
    """Record the fallback's calls, and check that every statement built meanwhile updates the
    counter row rather than upserting it (the engine's modules import these by name)."""
    calls: list[tuple] = []

    def record(*args: object) -> None:
        calls.append(args)
        sets.count_missed(*args)

    # By module object: queues.engine re-exports functions named like these modules.
    for name, builder in (
        ("enqueue", "_enqueue_one_sql"),
        ("enqueue", "_enqueue_sql"),
        ("dequeue", "_take_sql"),
    ):
        module = importlib.import_module(f"queues.engine.{name}")
        monkeypatch.setattr(module, "count_missed", record)
        real = getattr(module, builder)

        def build(*args: object, _real=real, **kw: object) -> str:
            assert kw["counter_row"] is True, "the statement upserts a row the engine knows"
            return _real(*args, **kw)

        monkeypatch.setattr(module, builder, build)
    return calls


def _enqueued(queue_id: int) -> int:
    return _counted(queue_id, "enqueued")


def _dequeued(queue_id: int) -> int:
    return _counted(queue_id, "dequeued")


def _msgs(n: int, value: object) -> list[engine.NewMessage]:
    return [msg({"n": value, "i": i}) for i in range(n)]


@LIVE
@pytest.mark.parametrize("n", [1, 3], ids=["single", "batch"])
def test_committed_enqueues_are_counted_once_each(admin_user, monkeypatch, n: int) -> None:
    queue = make_queue(admin_user, "COUNTED")
    with psycopg.connect(services.conninfo(), autocommit=True) as auto:
        info = engine.queue_info(auto, queue.pk)
        engine.enqueue(auto, info, _msgs(n, 0))  # makes the row
        assert sets.counter_key(auto, queue.pk) in sets.COUNTER_ROWS
        missed = _count_missed_calls(monkeypatch)
        for i in range(1, 5):  # the others update it, with no fallback
            engine.enqueue(auto, info, _msgs(n, i))
        assert missed == []
        monkeypatch.undo()
        assert _enqueued(queue.pk) == 5 * n

        with psycopg.connect(services.conninfo()) as txn:
            engine.enqueue(txn, info, _msgs(n, "undone"))
            txn.rollback()
        assert _enqueued(queue.pk) == 5 * n

        # The rows go (as if never made): the next enqueue, which expects its row, counts anyway.
        with psycopg.connect(services.conninfo(), autocommit=True) as c:
            c.execute("DELETE FROM aq_queue_stat WHERE queue_id = %s", (queue.pk,))
        engine.enqueue(auto, info, _msgs(n, 6))
        assert _enqueued(queue.pk) == n


@LIVE
@pytest.mark.parametrize("n", [1, 3], ids=["single", "batch"])
def test_a_first_enqueue_rolled_back_leaves_the_next_one_counted(admin_user, n: int) -> None:
    queue = make_queue(admin_user, "UNDONE")
    with psycopg.connect(services.conninfo()) as conn:
        info = engine.queue_info(conn, queue.pk)
        engine.enqueue(conn, info, _msgs(n, 1))  # makes the counter row...
        conn.rollback()  # ...which goes with it
        engine.enqueue(conn, info, _msgs(n, 2))
        conn.commit()
        assert _enqueued(queue.pk) == n
        engine.enqueue(conn, info, _msgs(n, 3))
        conn.commit()
    assert _enqueued(queue.pk) == 2 * n


def _block_the_fallback(auto: psycopg.Connection, other: psycopg.Connection, queue_id: int) -> None:
    """Delete the queue's counter rows and hold this backend's row uncommitted in ``other``, so
    the engine's UPDATE counts nothing and its fallback waits past lock_timeout."""
    auto.execute("DELETE FROM aq_queue_stat WHERE queue_id = %s", (queue_id,))
    other.execute(
        "INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued) VALUES (%s, %s, 0, 0)",
        (queue_id, auto.info.backend_pid % engine.STAT_SHARDS),
    )
    auto.execute("SET lock_timeout = '300ms'")


@LIVE
def test_an_autocommit_enqueue_whose_counter_cannot_be_written_still_succeeds(
    admin_user, caplog
) -> None:
    """In autocommit the message is committed before the fallback counts it: a fallback that
    fails (here: blocked past lock_timeout by another session's uncommitted counter row) is
    logged, and the enqueue returns its id rather than an error a caller would retry."""
    queue = make_queue(admin_user, "BLOCKED")
    with (
        psycopg.connect(services.conninfo(), autocommit=True) as auto,
        psycopg.connect(services.conninfo()) as other,
    ):
        info = engine.queue_info(auto, queue.pk)
        engine.enqueue(auto, info, [msg({"n": 1})])  # the engine now expects its row
        _block_the_fallback(auto, other, queue.pk)
        with caplog.at_level("WARNING", logger="queues.engine.sets"):
            [mid] = engine.enqueue(auto, info, [msg({"n": 2})])
        other.rollback()
        assert "enqueued counter of queue BLOCKED not written" in caplog.text
        stored = auto.execute("SELECT payload FROM aq_message WHERE id = %s", (mid,)).fetchone()
        assert stored == ({"n": 2},)


@LIVE
@pytest.mark.parametrize("retention", [0, 3600], ids=["deleted", "kept_as_processed"])
def test_committed_dequeues_are_counted_once_each(admin_user, monkeypatch, retention: int) -> None:
    queue = make_queue(admin_user, f"TAKEN_{retention}", retention_time=retention)
    with psycopg.connect(services.conninfo(), autocommit=True) as auto:
        info = engine.queue_info(auto, queue.pk)
        engine.enqueue(auto, info, [msg({"n": i}) for i in range(12)])
        assert len(engine.dequeue(auto, info, mode=engine.REMOVE)) == 1  # makes (or finds) the row
        assert sets.counter_key(auto, queue.pk) in sets.COUNTER_ROWS
        missed = _count_missed_calls(monkeypatch)
        for _ in range(3):  # the others update it, with no fallback
            assert len(engine.dequeue(auto, info, mode=engine.REMOVE)) == 1
        assert len(engine.dequeue(auto, info, mode=engine.REMOVE, batch=3)) == 3
        assert missed == []
        monkeypatch.undo()
        assert _dequeued(queue.pk) == 7

        with psycopg.connect(services.conninfo()) as txn:
            assert len(engine.dequeue(txn, info, mode=engine.REMOVE, batch=2)) == 2
            txn.rollback()
        assert _dequeued(queue.pk) == 7
        assert engine.dequeue(auto, info, mode=engine.REMOVE, batch=10) != []  # the 5 left
        assert _dequeued(queue.pk) == 12

        # An empty queue counts nothing, with the row known or not.
        assert engine.dequeue(auto, info, mode=engine.REMOVE) == []
        assert _dequeued(queue.pk) == 12

        # The rows go: the next dequeue, which expects its row, counts anyway.
        engine.enqueue(auto, info, [msg({"n": i}) for i in range(2)])
        auto.execute("DELETE FROM aq_queue_stat WHERE queue_id = %s", (queue.pk,))
        assert len(engine.dequeue(auto, info, mode=engine.REMOVE, batch=2)) == 2
        assert _dequeued(queue.pk) == 2


@LIVE
def test_a_first_dequeue_rolled_back_leaves_the_next_one_counted(admin_user) -> None:
    queue = make_queue(admin_user, "UNTAKEN")
    with psycopg.connect(services.conninfo()) as conn:
        info = engine.queue_info(conn, queue.pk)
        engine.enqueue(conn, info, [msg({"n": i}) for i in range(3)])
        # Without the enqueue's counter row (which a dequeue would update), so that:
        conn.execute("DELETE FROM aq_queue_stat WHERE queue_id = %s", (queue.pk,))
        conn.commit()
        assert len(engine.dequeue(conn, info, mode=engine.REMOVE)) == 1  # makes the row...
        conn.rollback()  # ...which goes with it, and the message comes back
        assert len(engine.dequeue(conn, info, mode=engine.REMOVE, batch=2)) == 2
        conn.commit()
        assert _dequeued(queue.pk) == 2
        assert len(engine.dequeue(conn, info, mode=engine.REMOVE)) == 1
        conn.commit()
    assert _dequeued(queue.pk) == 3


@LIVE
def test_an_autocommit_dequeue_whose_counter_cannot_be_written_still_returns_it(
    admin_user, caplog
) -> None:
    """The dequeued message is gone when the fallback counts it: a fallback that fails is logged,
    and the dequeue returns the message rather than an error (its caller would never get it)."""
    queue = make_queue(admin_user, "BLOCKED_DQ")
    with (
        psycopg.connect(services.conninfo(), autocommit=True) as auto,
        psycopg.connect(services.conninfo()) as other,
    ):
        info = engine.queue_info(auto, queue.pk)
        [first, second] = engine.enqueue(auto, info, [msg({"n": 1}), msg({"n": 2})])
        assert [m.id for m in engine.dequeue(auto, info, mode=engine.REMOVE)] == [first]
        _block_the_fallback(auto, other, queue.pk)
        with caplog.at_level("WARNING", logger="queues.engine.sets"):
            got = engine.dequeue(auto, info, mode=engine.REMOVE)
        other.rollback()
        assert [m.id for m in got] == [second]
        assert got[0].payload == {"n": 2}
        assert "dequeued counter of queue BLOCKED_DQ not written" in caplog.text
        left = auto.execute("SELECT count(*) FROM aq_message WHERE queue_id = %s", (queue.pk,))
        assert left.fetchone() == (0,)


@LIVE
@pytest.mark.parametrize("call", ["enqueue", "dequeue"])
def test_a_fallback_that_cannot_write_in_a_transaction_block_raises(admin_user, call) -> None:
    """``with conn.transaction()`` on an autocommit connection is a transaction all the same: a
    failed fallback aborts it, so the engine raises rather than report messages that the block's
    COMMIT (answered by ROLLBACK) does not keep."""
    queue = make_queue(admin_user, f"BLOCK_TX_{call.upper()}")
    with (
        psycopg.connect(services.conninfo(), autocommit=True) as auto,
        psycopg.connect(services.conninfo()) as other,
    ):
        info = engine.queue_info(auto, queue.pk)
        engine.enqueue(auto, info, [msg({"n": 1})])
        assert len(engine.dequeue(auto, info, mode=engine.REMOVE)) == 1  # the row is known
        engine.enqueue(auto, info, [msg({"n": 2})])
        _block_the_fallback(auto, other, queue.pk)
        with pytest.raises(psycopg.errors.LockNotAvailable), auto.transaction():
            if call == "enqueue":
                engine.enqueue(auto, info, [msg({"n": 3})])
            else:
                engine.dequeue(auto, info, mode=engine.REMOVE)
        other.rollback()
        left = auto.execute("SELECT payload FROM aq_message WHERE queue_id = %s", (queue.pk,))
        assert left.fetchall() == [({"n": 2},)]  # nothing enqueued, nothing taken


@LIVE
def test_exception_queue_dequeues_are_counted_once_each(admin_user, monkeypatch) -> None:
    """The exception queue's statement also deletes the failed subscribers' copies; it counts
    in the exception queue's own counter row, updated after the first dequeue."""
    queue = make_queue(admin_user, "FAILED_ONES")
    with psycopg.connect(services.conninfo(), autocommit=True) as auto:
        info = engine.queue_info(auto, queue.pk)
        ids = engine.enqueue(auto, info, [msg({"n": i}) for i in range(4)])
        assert engine.move_to_exception_queue(auto, ids, "test") == 4
        exq = engine.queue_info(auto, queue.exception_queue_id)
        assert [m.id for m in engine.dequeue(auto, exq, mode=engine.REMOVE)] == ids[:1]
        missed = _count_missed_calls(monkeypatch)
        assert [m.id for m in engine.dequeue(auto, exq, mode=engine.REMOVE, batch=2)] == ids[1:3]
        assert missed == []
        monkeypatch.undo()
        assert _dequeued(exq.id) == 3
        assert _dequeued(queue.pk) == 0
