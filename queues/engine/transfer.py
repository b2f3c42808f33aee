"""Transfer: a subscriber's batch moved into another queue in one statement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from queues.engine.buffered import subscriber_dequeue_stat_sql
from queues.engine.rows import _candidate_filter, _sources, _stat
from queues.engine.sets import FREE_COPY, count_down_sql, insert_copies_sql
from queues.engine.storage import hold_storage
from queues.engine.topology import subscriber_ids
from queues.engine.types import (
    BUFFERED,
    PERSISTENT_OR_BUFFERED,
    TRANSACTIONAL,
    NoSubscribers,
    QueueDisabled,
    QueueInfo,
)


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
    sender, kind, type, payload and delivery mode (buffered messages arrive in the destination's
    buffer, except in a transaction-grouping queue, which takes none); their headers gain
    ``aq$_source_msgid``.

    The destination must take every message as it is: a single-consumer queue, or a
    multi-consumer one whose subscribers have no rules (the caller checks; a subscriber rule
    could refuse a message, which needs the one-by-one path). No subscriber at all is refused
    with NoSubscribers, nothing consumed."""
    # The destination's storage first: a queue delete committing after the check below would
    # otherwise leave the copies pointing at no queue (no foreign key guards them).
    hold_storage(conn, [source.queue_table_id, destination.queue_table_id])
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
    # Both kinds of message, buffered ones in the buffer or spilled: the queue table's partitions.
    M, C = _sources(source, PERSISTENT_OR_BUFFERED)
    # Buffered messages arrive buffered, where the destination can hold buffered messages.
    keep_mode = destination.message_grouping != TRANSACTIONAL
    copied = "(SELECT * FROM k WHERE k.keep)"
    buffered_taken = f"(SELECT * FROM u WHERE u.delivery_mode = '{BUFFERED}')"
    sql = f"""
    WITH c AS (
        SELECT mc.id AS cid FROM {C} mc JOIN {M} m ON m.id = mc.message_id
        WHERE mc.subscriber_id = %(sub)s AND {where} AND {FREE_COPY}
        ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT %(n)s FOR UPDATE OF mc SKIP LOCKED
    ),
    d AS (DELETE FROM {C} mc USING c WHERE mc.id = c.cid RETURNING mc.message_id),
    u AS ({count_down_sql(M, "d", returning="m.*")}),
    {_stat("u", PERSISTENT_OR_BUFFERED)},
    bsub AS ({subscriber_dequeue_stat_sql("sub", buffered_taken)}),
    k AS (SELECT m.*, ({keep_sql}) AS keep FROM u AS m),
    {insert_copies_sql(destination, copied, keep_mode=keep_mode)}
    SELECT (SELECT count(*) FROM u), count(*), coalesce(sum(size), 0),
           CASE WHEN count(*) > 0 THEN pg_notify(%(channel)s, '') END
    FROM ins
    """
    taken, moved, size, _ = conn.execute(sql, params, prepare=True).fetchone()
    return TransferResult(int(taken), int(moved), int(size))
