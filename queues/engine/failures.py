"""Failed attempts, retry delays and exception queues."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

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
    conn.execute(
        """
        WITH n AS (SELECT x.message_id, x.subscriber_id, x.reason, x.attempts, m.queue_table_id,
                          nextval(pg_get_serial_sequence('aq_message', 'id')) AS copy_id
                   FROM unnest(%(mids)s::bigint[], %(sids)s::bigint[], %(reasons)s::text[],
                               %(attempts)s::int[])
                        AS x(message_id, subscriber_id, reason, attempts)
                   JOIN aq_message m ON m.id = x.message_id),
        copy AS (
            INSERT INTO aq_message (id, queue_id, queue_table_id, state, priority, sort_pri,
                commit_seq, kind, type_name, correlation, sender, headers, payload, enq_time,
                enq_user, expiration, attempts, pending_consumers, original_queue_id,
                exception_reason, replayed)
            SELECT n.copy_id, q.exception_queue_id, m.queue_table_id, 'EXPIRED', m.priority,
                   m.sort_pri, m.commit_seq, m.kind, m.type_name, m.correlation, m.sender,
                   m.headers, m.payload, m.enq_time, m.enq_user, m.expiration,
                   coalesce(n.attempts, m.attempts), 1, m.queue_id,
                   n.reason || ' (consumer ' || s.name || ')', false
            FROM n JOIN aq_message m ON m.id = n.message_id
            JOIN queues_queue q ON q.id = m.queue_id
            JOIN queues_subscriber s ON s.id = n.subscriber_id
        )
        INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts, queue_table_id)
        SELECT n.copy_id, n.subscriber_id, 0, n.queue_table_id FROM n
        """,
        {
            "mids": list(message_ids),
            "sids": list(subscriber_ids),
            "reasons": list(reasons),
            # The subscriber's own count of attempts, when the copy goes for too many of them.
            "attempts": list(attempts) if attempts is not None else [None] * len(message_ids),
        },
    )
    if consumed:
        return
    conn.execute(
        """
        UPDATE aq_message m SET pending_consumers = m.pending_consumers - x.n,
               state = CASE WHEN m.pending_consumers = x.n THEN 'PROCESSED' ELSE m.state END,
               processed_at = CASE WHEN m.pending_consumers = x.n THEN now() END
        FROM (SELECT message_id, count(*) AS n FROM unnest(%s::bigint[]) AS t(message_id)
              GROUP BY message_id) x
        WHERE m.id = x.message_id
        """,
        (list(message_ids),),
    )


def move_to_exception_queue(conn: psycopg.Connection, ids: Sequence[int], reason: str) -> int:
    """Move messages to their queue's exception queue with state EXPIRED and ``reason``."""
    if not ids:
        return 0
    cur = conn.execute(
        """
        UPDATE aq_message m SET original_queue_id = m.queue_id, queue_id = q.exception_queue_id,
               state = 'EXPIRED', exception_reason = %s, delay_until = NULL, locked_until = NULL,
               lock_token = NULL
        FROM queues_queue q
        WHERE q.id = m.queue_id AND m.id = ANY(%s) AND q.exception_queue_id IS NOT NULL
        """,
        (reason, list(ids)),
    )
    return cur.rowcount
