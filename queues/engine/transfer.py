"""Transfer: a subscriber's batch moved into another queue in one statement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from queues.engine.rows import _candidate_filter, _stat
from queues.engine.topology import subscriber_ids
from queues.engine.types import STAT_SHARDS, NoSubscribers, QueueDisabled, QueueInfo


@dataclass(frozen=True)
class TransferResult:
    taken: int  # the subscriber's copies consumed at the source
    moved: int  # messages enqueued at the destination
    bytes: int  # payload bytes moved


def transfer(
    conn: psycopg.Connection,
    source: QueueInfo,
    sub_id: int,
    destination: QueueInfo,
    *,
    batch: int,
    keep_sql: str = "TRUE",
    keep_params: dict[str, Any] | None = None,
    user: str = "",
) -> TransferResult:
    """Consume up to ``batch`` of subscriber ``sub_id``'s messages at ``source`` (in order) and
    enqueue those for which ``keep_sql`` (a boolean over ``aq_message m``, never NULL) is TRUE
    into ``destination``, in one statement of the caller's transaction: what a propagation does
    when its rules compile to SQL and transform nothing. The copies keep priority, correlation,
    sender, kind, type and payload; their headers gain ``aq$_source_msgid``.

    The destination must take every message as it is: a single-consumer queue, or a
    multi-consumer one whose subscribers have no rules (the caller checks; a subscriber rule
    could refuse a message, which needs the one-by-one path). No subscriber at all is refused
    with NoSubscribers, nothing consumed."""
    state = conn.execute(
        "SELECT (SELECT dequeue_enabled FROM queues_queue WHERE id = %s), "
        "(SELECT enqueue_enabled AND kind = 'NORMAL_QUEUE' FROM queues_queue WHERE id = %s)",
        (source.id, destination.id),
    ).fetchone()
    if not state or not state[0]:
        raise QueueDisabled(f"Dequeue is disabled on queue {source.name}.", field="queue")
    if not state[1]:
        raise QueueDisabled(f"Enqueue is disabled on queue {destination.name}.", field="queue")
    subs: list[int] = []
    if destination.multiple_consumers:
        subs = list(subscriber_ids(conn, destination).values())
        if not subs:
            raise NoSubscribers(
                f"Queue {destination.name} has no subscribers: a message nobody can dequeue is "
                "refused.",
                field="queue",
            )
    params: dict[str, Any] = {
        "qid": source.id,
        "sub": sub_id,
        "n": batch,
        "dqid": destination.id,
        "dqt": destination.queue_table_id,
        "by_pri": 1 if destination.by_priority else 0,
        "cseq": None if destination.commit_time else 0,
        "npend": len(subs),
        "subs": subs,
        "user": user,
        "channel": destination.channel,
        **(keep_params or {}),
    }
    where, _ = _candidate_filter(source, correlation=None, msgid=None, after=None)
    free = "(mc.locked_until IS NULL OR (mc.lock_token IS NULL AND mc.locked_until <= now()))"
    sql = f"""
    WITH c AS (
        SELECT mc.id AS cid FROM {source.consumers} mc JOIN {source.messages} m
            ON m.id = mc.message_id
        WHERE mc.subscriber_id = %(sub)s AND {where} AND {free}
        ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT %(n)s FOR UPDATE OF mc SKIP LOCKED
    ),
    d AS (DELETE FROM {source.consumers} mc USING c WHERE mc.id = c.cid RETURNING mc.message_id),
    u AS (
        UPDATE {source.messages} m SET pending_consumers = m.pending_consumers - 1,
               state = CASE WHEN m.pending_consumers = 1 THEN 'PROCESSED' ELSE m.state END,
               processed_at = CASE WHEN m.pending_consumers = 1 THEN now() END
        FROM d WHERE m.id = d.message_id
        RETURNING m.id, m.priority, m.sort_pri, m.commit_seq, m.kind, m.type_name,
                  m.correlation, m.sender, m.headers, m.payload
    ),
    {_stat("u")},
    k AS (SELECT m.*, ({keep_sql}) AS keep FROM u AS m),
    ins AS (
        INSERT INTO {destination.messages} (queue_id, queue_table_id, state, priority, sort_pri, commit_seq,
                                kind, type_name, correlation, sender, headers, payload, enq_time,
                                enq_user, attempts, pending_consumers, exception_reason, replayed)
        SELECT %(dqid)s, %(dqt)s, 'READY', k.priority, %(by_pri)s * k.priority, %(cseq)s, k.kind,
               k.type_name, k.correlation, k.sender,
               k.headers || jsonb_build_object('aq$_source_msgid', k.id), k.payload, now(),
               %(user)s, 0, %(npend)s, '', false
        FROM k WHERE k.keep ORDER BY k.sort_pri, k.commit_seq, k.id
        RETURNING id, octet_length(payload::text) AS size
    ),
    cons AS (
        INSERT INTO {destination.consumers} (message_id, subscriber_id, attempts, queue_table_id)
        SELECT ins.id, s.sub, 0, %(dqt)s FROM ins CROSS JOIN unnest(%(subs)s::bigint[]) AS s(sub)
    ),
    dstat AS (
        INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued)
        SELECT %(dqid)s, pg_backend_pid() %% {STAT_SHARDS}, count(*), 0 FROM ins
        HAVING count(*) > 0
        ON CONFLICT (queue_id, shard)
        DO UPDATE SET enqueued = aq_queue_stat.enqueued + EXCLUDED.enqueued
    )
    SELECT (SELECT count(*) FROM u), count(*), coalesce(sum(size), 0),
           CASE WHEN count(*) > 0 THEN pg_notify(%(channel)s, '') END
    FROM ins
    """
    taken, moved, size, _ = conn.execute(sql, params, prepare=True).fetchone()
    return TransferResult(int(taken), int(moved), int(size))
