"""Replay of exception-queue messages to their original queues."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from queues.engine.storage import consumer_part, message_part
from queues.engine.types import InvalidMessage, QueueInfo, channel_name


def replay(conn: psycopg.Connection, queue: QueueInfo, ids: Sequence[int] | None) -> list[int]:
    """Move messages of exception queue ``queue`` back to their original queues, marked replayed.

    Commit-time queues get a new commit sequence at commit (the trigger fires on commit_seq =
    NULL), so a replayed message joins the tail of its queue's order.
    """
    if not queue.is_exception:
        raise InvalidMessage(f"{queue.name} is not an exception queue.", field="queue")
    sel = "m.queue_id = %(qid)s AND m.state = 'EXPIRED'"
    # An exception queue lives in its source queues' queue table: one partition holds them all.
    msgs = message_part(queue.queue_table_id)
    params: dict[str, Any] = {"qid": queue.id}
    if ids is not None:
        sel += " AND m.id = ANY(%(ids)s)"
        params["ids"] = list(ids)
        orphan = conn.execute(
            f"SELECT m.id FROM {msgs} m WHERE {sel} AND m.original_queue_id IS NULL LIMIT 1",
            params,
        ).fetchone()
        if orphan:
            raise InvalidMessage(
                f"Message {orphan[0]} has no original queue to go back to.", field="ids"
            )
    rows = conn.execute(
        f"""
        WITH c AS (SELECT m.id FROM {msgs} m WHERE {sel} AND m.original_queue_id IS NOT NULL
                   FOR UPDATE SKIP LOCKED)
        UPDATE {msgs} m SET queue_id = m.original_queue_id, original_queue_id = NULL,
               -- A multi-consumer message whose subscribers have all gone is done, not READY
               -- for nobody.
               state = CASE WHEN qt.multiple_consumers AND m.pending_consumers = 0
                            THEN 'PROCESSED' ELSE 'READY' END,
               processed_at = CASE WHEN qt.multiple_consumers AND m.pending_consumers = 0
                                   THEN now() END,
               attempts = 0, replayed = true, exception_reason = '',
               locked_until = NULL, lock_token = NULL, delay_until = NULL,
               commit_seq = CASE WHEN qt.sort_order LIKE '%%commit_time' THEN NULL ELSE 0 END,
               expire_at = CASE WHEN m.expiration IS NOT NULL
                                THEN now() + make_interval(secs => m.expiration) END
        FROM c, queues_queuetable qt
        WHERE m.id = c.id AND qt.id = m.queue_table_id
        RETURNING m.id, m.queue_id
        """,
        params,
    ).fetchall()
    conn.execute(
        f"UPDATE {consumer_part(queue.queue_table_id)} SET attempts = 0, locked_until = NULL, "
        "lock_token = NULL "
        "WHERE message_id = ANY(%s)",
        ([r[0] for r in rows],),
    )
    for qid in {r[1] for r in rows}:
        conn.execute("SELECT pg_notify(%s, '')", (channel_name(qid),))
    return sorted(r[0] for r in rows)
