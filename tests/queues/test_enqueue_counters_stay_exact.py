"""The enqueue counters (aq_queue_stat) count every committed single enqueue exactly once,
whether the statement updates this backend's counter row or has to make it, and when a row the
engine saw is gone (a rolled-back first enqueue made it, or it was deleted)."""

from __future__ import annotations

import psycopg

from queues import engine, services

from .helpers import LIVE, make_queue, msg


def _enqueued(queue_id: int) -> int:
    with psycopg.connect(services.conninfo()) as c:
        row = c.execute(
            "SELECT coalesce(sum(enqueued), 0) FROM aq_queue_stat WHERE queue_id = %s",
            (queue_id,),
        ).fetchone()
    return int(row[0])


@LIVE
def test_committed_single_enqueues_are_counted_once_each(admin_user) -> None:
    queue = make_queue(admin_user, "COUNTED")
    with psycopg.connect(services.conninfo(), autocommit=True) as auto:
        info = engine.queue_info(auto, queue.pk)
        for i in range(5):  # the first makes the row, the others update it
            engine.enqueue(auto, info, [msg({"n": i})])
        assert _enqueued(queue.pk) == 5

        with psycopg.connect(services.conninfo()) as txn:
            engine.enqueue(txn, info, [msg({"n": "undone"})])
            txn.rollback()
        assert _enqueued(queue.pk) == 5

        # The rows go (as if never made): the next enqueue, which expects its row, counts anyway.
        with psycopg.connect(services.conninfo(), autocommit=True) as c:
            c.execute("DELETE FROM aq_queue_stat WHERE queue_id = %s", (queue.pk,))
        engine.enqueue(auto, info, [msg({"n": 6})])
        assert _enqueued(queue.pk) == 1


@LIVE
def test_a_first_enqueue_rolled_back_leaves_the_next_one_counted(admin_user) -> None:
    queue = make_queue(admin_user, "UNDONE")
    with psycopg.connect(services.conninfo()) as conn:
        info = engine.queue_info(conn, queue.pk)
        engine.enqueue(conn, info, [msg({"n": 1})])  # makes the counter row...
        conn.rollback()  # ...which goes with it
        engine.enqueue(conn, info, [msg({"n": 2})])
        conn.commit()
        assert _enqueued(queue.pk) == 1
        engine.enqueue(conn, info, [msg({"n": 3})])
        conn.commit()
    assert _enqueued(queue.pk) == 2


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
        auto.execute("DELETE FROM aq_queue_stat WHERE queue_id = %s", (queue.pk,))
        shard = auto.info.backend_pid % engine.STAT_SHARDS
        other.execute(  # the same row, made and not committed: the fallback waits for it
            "INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued) VALUES (%s, %s, 0, 0)",
            (queue.pk, shard),
        )
        auto.execute("SET lock_timeout = '300ms'")
        with caplog.at_level("WARNING", logger="queues.engine.enqueue"):
            [mid] = engine.enqueue(auto, info, [msg({"n": 2})])
        other.rollback()
        assert "enqueue counter of queue BLOCKED not written" in caplog.text
        stored = auto.execute("SELECT payload FROM aq_message WHERE id = %s", (mid,)).fetchone()
        assert stored == ({"n": 2},)
