"""Leases of LOCKED dequeues: ack and release."""

from __future__ import annotations

from uuid import UUID

import psycopg

from queues.engine.failures import fail_attempts, fail_consumer_attempts
from queues.engine.rows import _COLUMNS, _finish_consumed_sql, _row_to_message, _stat
from queues.engine.topology import subscriber_id
from queues.engine.types import DequeuedMessage, LeaseMismatch, QueueInfo


def ack(
    conn: psycopg.Connection,
    queue: QueueInfo,
    msgid: int,
    token: UUID | str,
    *,
    consumer: str | None = None,
) -> DequeuedMessage:
    """Finish a LOCKED dequeue as a REMOVE."""
    M, C = queue.messages, queue.consumers
    if queue.multiple_consumers and not queue.is_exception:
        sub = subscriber_id(conn, queue, consumer or "")
        sql = (
            f"WITH d AS (DELETE FROM {C} mc WHERE mc.message_id = %(mid)s AND "
            "mc.subscriber_id = %(sub)s AND mc.lock_token = %(tok)s RETURNING mc.message_id)"
            + _finish_consumed_sql("d", M)
        )
        rows = conn.execute(sql, {"mid": msgid, "sub": sub, "tok": str(token), "qid": queue.id})
    elif queue.retention_time > 0 and not queue.is_exception:
        sql = (
            f"WITH d AS (UPDATE {M} m SET state = 'PROCESSED', processed_at = now(), "
            f"locked_until = NULL, lock_token = NULL WHERE m.id = %(mid)s AND m.queue_id = %(qid)s "
            f"AND m.lock_token = %(tok)s RETURNING {_COLUMNS}), {_stat('d')} SELECT * FROM d"
        )
        rows = conn.execute(sql, {"mid": msgid, "tok": str(token), "qid": queue.id})
    else:
        sql = (
            f"WITH gone AS (DELETE FROM {C} WHERE message_id = %(mid)s), "
            f"d AS (DELETE FROM {M} m WHERE m.id = %(mid)s AND m.queue_id = %(qid)s "
            f"AND m.lock_token = %(tok)s RETURNING {_COLUMNS}), {_stat('d')} SELECT * FROM d"
        )
        rows = conn.execute(sql, {"mid": msgid, "tok": str(token), "qid": queue.id})
    row = rows.fetchone()
    if row is None:
        raise LeaseMismatch(
            f"Message {msgid} is not locked with that token (the lease ran out or it was "
            "already acknowledged).",
            field="lock_token",
        )
    return _row_to_message(row)


def release(
    conn: psycopg.Connection,
    queue: QueueInfo,
    msgid: int,
    token: UUID | str,
    *,
    consumer: str | None = None,
    failed: bool = True,
) -> None:
    """Give a LOCKED message back. ``failed`` counts an attempt (retry delay, exception queue)."""
    M, C = queue.messages, queue.consumers
    if queue.multiple_consumers and not queue.is_exception:
        sub = subscriber_id(conn, queue, consumer or "")
        row = conn.execute(
            f"SELECT id FROM {C} WHERE message_id = %s AND subscriber_id = %s "
            "AND lock_token = %s FOR UPDATE",
            (msgid, sub, str(token)),
        ).fetchone()
        if row is None:
            raise LeaseMismatch(
                f"Message {msgid} is not locked with that token.", field="lock_token"
            )
        # Hand the lease back first: counting an attempt leaves rows under a live lease alone.
        conn.execute(
            f"UPDATE {C} SET locked_until = NULL, lock_token = NULL WHERE id = %s",
            (row[0],),
        )
        if failed:
            fail_consumer_attempts(conn, [row[0]])
        return
    row = conn.execute(
        f"SELECT id FROM {M} WHERE id = %s AND queue_id = %s AND lock_token = %s FOR UPDATE",
        (msgid, queue.id, str(token)),
    ).fetchone()
    if row is None:
        raise LeaseMismatch(f"Message {msgid} is not locked with that token.", field="lock_token")
    conn.execute(f"UPDATE {M} SET locked_until = NULL, lock_token = NULL WHERE id = %s", (msgid,))
    if failed:
        fail_attempts(conn, [msgid])
