"""Failed attempts, retry delays and exception queues."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from queues.engine.sets import count_down_sql, exception_copies
from queues.engine.types import REASON_MAX_RETRIES


def fail_attempts(conn: psycopg.Connection, ids: Sequence[int]) -> list[int]:
    """Count a failed attempt on single-consumer messages (a rolled-back dequeue or a failed
    release). ``retry_delay`` defers the next try; past ``max_retries`` the message moves to its
    queue's exception queue. Returns the ids moved there.

    A message under a live lease is left alone: after a rolled-back dequeue another consumer may
    have leased it before the attempt is counted, and clearing that lease would hand it out twice.
    """
    if not ids:
        return []
    rows = conn.execute(
        """
        UPDATE aq_message m SET attempts = m.attempts + 1, locked_until = NULL, lock_token = NULL,
               state = CASE WHEN q.retry_delay > 0 THEN 'WAITING' ELSE 'READY' END,
               delay_until = CASE WHEN q.retry_delay > 0
                                  THEN now() + make_interval(secs => q.retry_delay) END
        FROM queues_queue q
        WHERE q.id = m.queue_id AND m.id = ANY(%s) AND m.state IN ('READY', 'WAITING')
          AND (m.lock_token IS NULL OR m.locked_until <= now())
        RETURNING m.id, m.attempts > q.max_retries
        """,
        (list(ids),),
    ).fetchall()
    over = [mid for mid, exceeded in rows if exceeded]
    move_to_exception_queue(conn, over, REASON_MAX_RETRIES)
    return over


def fail_consumer_attempts(conn: psycopg.Connection, consumer_row_ids: Sequence[int]) -> None:
    """The multi-consumer form of :func:`fail_attempts`: the attempt counts for one subscriber.
    Past ``max_retries`` that subscriber's copy goes to the exception queue, named in the reason."""
    if not consumer_row_ids:
        return
    rows = conn.execute(
        """
        UPDATE aq_message_consumer mc SET attempts = mc.attempts + 1, lock_token = NULL,
               locked_until = CASE WHEN q.retry_delay > 0
                                   THEN now() + make_interval(secs => q.retry_delay) END
        FROM aq_message m JOIN queues_queue q ON q.id = m.queue_id
        WHERE mc.id = ANY(%s) AND m.id = mc.message_id
          AND (mc.lock_token IS NULL OR mc.locked_until <= now())  -- see fail_attempts
        RETURNING mc.id, mc.attempts > q.max_retries
        """,
        (list(consumer_row_ids),),
    ).fetchall()
    over = [cid for cid, exceeded in rows if exceeded]
    if not over:
        return
    taken = conn.execute(
        """
        WITH d AS (DELETE FROM aq_message_consumer mc WHERE mc.id = ANY(%s)
                   RETURNING mc.message_id, mc.subscriber_id, mc.attempts)
        SELECT d.message_id, d.subscriber_id, d.attempts FROM d
        """,
        (over,),
    ).fetchall()
    consumer_exception_copies(
        conn,
        [t[0] for t in taken],
        [t[1] for t in taken],
        [REASON_MAX_RETRIES] * len(taken),
        attempts=[t[2] for t in taken],
        consumed=False,
    )


def consumer_exception_copies(
    conn: psycopg.Connection,
    message_ids: Sequence[int],
    subscriber_ids: Sequence[int],
    reasons: Sequence[str],
    *,
    attempts: Sequence[int] | None = None,
    consumed: bool = True,
) -> None:
    """Put one subscriber's copy of each message into the source queue's exception queue, with a
    reason that names the subscriber. The copy keeps a consumer row for that subscriber, so a
    replay returns it to that subscriber (and only to it).

    ``consumed``: the subscriber's consumer row is already gone and counted down (a REMOVE
    dequeue did it, as a propagation does); otherwise count the originals down here."""
    if not message_ids:
        return
    exception_copies(
        conn, message_ids, subscriber_ids, reasons, attempts=attempts, name_consumer=True
    )
    if consumed:
        return
    conn.execute(
        count_down_sql("aq_message", "unnest(%s::bigint[]) AS t(message_id)", returning="m.id"),
        (list(message_ids),),
    )


def move_to_exception_queue(conn: psycopg.Connection, ids: Sequence[int], reason: str) -> int:
    """Move messages to their queue's exception queue with state EXPIRED and ``reason``. A
    buffered one arrives as a persistent message (AQ stores error-queue messages in the queue
    table, never in a buffer); the caller took it out of the buffer first
    (:func:`queues.engine.buffered.out_of_buffer`)."""
    if not ids:
        return 0
    cur = conn.execute(
        """
        UPDATE aq_message m SET original_queue_id = m.queue_id, queue_id = q.exception_queue_id,
               state = 'EXPIRED', exception_reason = %s, delay_until = NULL, locked_until = NULL,
               lock_token = NULL, delivery_mode = 'PERSISTENT'
        FROM queues_queue q
        WHERE q.id = m.queue_id AND m.id = ANY(%s) AND q.exception_queue_id IS NOT NULL
          AND NOT m.in_buffer
        """,
        (reason, list(ids)),
    )
    return cur.rowcount
