"""The queue monitor's timers: delay, expiration, leases, retention and spilling."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from queues.engine import buffered
from queues.engine.failures import fail_attempts, fail_consumer_attempts, move_to_exception_queue
from queues.engine.grouping import expire_leases
from queues.engine.types import REASON_EXPIRED, channel_name


@dataclass
class MonitorReport:
    made_ready: int = 0
    expired: int = 0
    leases_released: int = 0
    removed: int = 0
    spilled: int = 0

    def as_dict(self) -> dict[str, int]:
        return self.__dict__.copy()


def only_tables(tables: Sequence[int] | None, alias: str = "") -> str:
    """The SQL condition that keeps the rows of ``tables`` (bound as ``%(tables)s``), or none.
    On ``queue_table_id``, the partition key, so a pass prunes the other queue tables' leaves."""
    if tables is None:
        return ""
    return f" AND {alias}queue_table_id = ANY(%(tables)s)"


def monitor_run(
    conn: psycopg.Connection, *, limit: int = 10_000, tables: Sequence[int] | None = None
) -> MonitorReport:
    """One pass of AQ's queue monitor over the messages of ``tables`` (queue table ids; None:
    every queue table). Every step claims rows with SKIP LOCKED and checks its condition again
    in the UPDATE, so two monitors running at once neither clash nor double-count."""
    report = MonitorReport()
    only, only_m = only_tables(tables), only_tables(tables, "m.")
    p = {"n": limit, "tables": list(tables) if tables is not None else None}
    rows = conn.execute(
        f"""
        WITH c AS (SELECT id FROM aq_message WHERE state = 'WAITING' AND delay_until <= now()
                   {only} ORDER BY delay_until LIMIT %(n)s FOR UPDATE SKIP LOCKED)
        UPDATE aq_message m SET state = 'READY', delay_until = NULL FROM c
        WHERE m.id = c.id AND m.state = 'WAITING' RETURNING m.queue_id
        """,
        p,
    ).fetchall()
    report.made_ready = len(rows)
    woken = {r[0] for r in rows}

    expired = conn.execute(
        f"""
        SELECT id FROM aq_message WHERE state = 'READY' AND expire_at <= now()
        AND locked_until IS NULL {only} ORDER BY expire_at LIMIT %(n)s FOR UPDATE SKIP LOCKED
        """,
        p,
    ).fetchall()
    # Exception queues hold no buffered message: expired ones leave the buffer first.
    expired_ids = buffered.out_of_buffer(conn, [r[0] for r in expired])
    buffered.count_expired(conn, expired_ids)
    report.expired = move_to_exception_queue(conn, expired_ids, REASON_EXPIRED)

    leased = conn.execute(
        f"""
        SELECT id FROM aq_message WHERE locked_until < now() AND lock_token IS NOT NULL
        {only} LIMIT %(n)s FOR UPDATE SKIP LOCKED
        """,
        p,
    ).fetchall()
    fail_attempts(conn, [r[0] for r in leased])
    leased_c = conn.execute(
        f"""
        SELECT id FROM aq_message_consumer WHERE locked_until < now() AND lock_token IS NOT NULL
        {only} LIMIT %(n)s FOR UPDATE SKIP LOCKED
        """,
        p,
    ).fetchall()
    fail_consumer_attempts(conn, [r[0] for r in leased_c])
    report.leases_released = len(leased) + len(leased_c)
    woken |= {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT queue_id FROM aq_message WHERE id = ANY(%s)", ([r[0] for r in leased],)
        ).fetchall()
    }

    expire_leases(conn, limit=limit, tables=tables)  # message groups whose owner went away
    report.removed = conn.execute(
        f"""
        WITH c AS (SELECT m.id FROM aq_message m JOIN queues_queue q ON q.id = m.queue_id
                   WHERE m.state = 'PROCESSED'
                   AND m.processed_at + make_interval(secs => q.retention_time) <= now()
                   {only_m} LIMIT %(n)s FOR UPDATE OF m SKIP LOCKED),
        gone AS (DELETE FROM aq_message_consumer mc USING c WHERE mc.message_id = c.id)
        DELETE FROM aq_message m USING c WHERE m.id = c.id
        """,
        p,
    ).rowcount
    # Buffered messages left too long in the buffer, or beyond their queue's share of the pool,
    # go to logged storage.
    report.spilled = buffered.spill(conn, limit=limit, tables=tables)
    for qid in woken:
        conn.execute("SELECT pg_notify(%s, '')", (channel_name(qid),))
    return report
