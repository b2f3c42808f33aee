"""Purge: messages removed by condition."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from queues.engine.storage import consumer_part, message_part
from queues.engine.types import QueueInfo


@dataclass
class PurgeCondition:
    """Which messages a purge removes; empty means all of them."""

    states: Sequence[str] = ()
    correlation: str | None = None
    ids: Sequence[int] | None = None
    enqueued_before: datetime | None = None
    priority: int | None = None

    def is_all(self) -> bool:
        return not (
            self.states
            or self.correlation
            or self.ids is not None
            or self.enqueued_before
            or self.priority is not None
        )


def purge(conn: psycopg.Connection, queue: QueueInfo, condition: PurgeCondition) -> int:
    """Delete the queue's messages matching ``condition``; messages locked by a running dequeue
    are skipped (AQ's purge with block => FALSE). Returns how many were removed.

    A purge of everything in a queue whose queue table holds nobody else's messages truncates its
    storage instead, which leaves no dead rows behind (see :func:`_truncate`)."""
    if condition.is_all():
        removed = _truncate(conn, queue)
        if removed is not None:
            return removed
    parts = ["m.queue_id = %(qid)s"]
    params: dict[str, Any] = {"qid": queue.id}
    if condition.states:
        parts.append("m.state = ANY(%(states)s)")
        params["states"] = list(condition.states)
    if condition.correlation:
        parts.append("m.correlation LIKE %(corr)s")
        params["corr"] = condition.correlation
    if condition.ids is not None:
        parts.append("m.id = ANY(%(ids)s)")
        params["ids"] = list(condition.ids)
    if condition.enqueued_before:
        parts.append("m.enq_time < %(before)s")
        params["before"] = condition.enqueued_before
    if condition.priority is not None:
        parts.append("m.priority = %(pri)s")
        params["pri"] = condition.priority
    where = " AND ".join(parts)
    # The queue table's partition: both its leaves (persistent and buffered).
    msgs, cons = message_part(queue.queue_table_id), consumer_part(queue.queue_table_id)
    cur = conn.execute(
        f"""
        WITH c AS (SELECT m.id FROM {msgs} m WHERE {where} FOR UPDATE SKIP LOCKED),
        gone AS (DELETE FROM {cons} mc USING c WHERE mc.message_id = c.id)
        DELETE FROM {msgs} m USING c WHERE m.id = c.id
        """,
        params,
    )
    return cur.rowcount


def _truncate(conn: psycopg.Connection, queue: QueueInfo) -> int | None:
    """TRUNCATE the queue table's storage when every message in it is this queue's; None when it
    cannot (another queue's messages are there: its exception queue's, or a sibling queue's; or
    a session is using the storage, since a purge does not wait for running dequeues; or this
    very transaction wrote there).

    The exclusive lock is taken with NOWAIT inside a savepoint, so a refusal leaves the caller's
    transaction as it was and the row-by-row purge runs instead."""
    msgs, cons = message_part(queue.queue_table_id), consumer_part(queue.queue_table_id)
    try:
        with conn.transaction():
            conn.execute(f"LOCK TABLE {msgs}, {cons} IN ACCESS EXCLUSIVE MODE NOWAIT")
            others = conn.execute(
                f"SELECT EXISTS (SELECT 1 FROM {msgs} WHERE queue_id <> %s)", (queue.id,)
            ).fetchone()[0]
            if others:
                raise _Refused
            count = conn.execute(f"SELECT count(*) FROM {msgs}").fetchone()[0]
            conn.execute(f"TRUNCATE {cons}, {msgs}")
            return int(count)
    except (_Refused, psycopg.errors.LockNotAvailable, psycopg.errors.ObjectInUse):
        # ObjectInUse: this transaction wrote there and its deferred checks are still pending.
        return None


class _Refused(Exception):
    """Rolls the savepoint (and its lock) back."""
