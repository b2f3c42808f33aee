"""Set-based statements over a named set of rows: the engine's only copy of each.

Each builder takes the name of a relation holding the rows to act on (a CTE of the calling
statement, or a temporary table of a Spark part: ``bulk_in``, ``bulk_claimed``) and returns SQL
that names the queue table's storage leaves. :func:`queues.engine.transfer`, the dequeue and
failure paths and the Spark writer (``jobs/spark/sink.py``) all build their statements from these,
so nothing outside the engine writes message rows (a test checks it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg

from queues.engine.buffered import PUBLISHING
from queues.engine.storage import consumer_leaf, consumer_part, message_leaf, message_part
from queues.engine.types import BUFFERED, PERSISTENT, STAT_SHARDS, QueueInfo

log = logging.getLogger(__name__)

# A consumer row with a lock_token is leased; one with only locked_until waits out a retry delay.
FREE_COPY = "(mc.locked_until IS NULL OR (mc.lock_token IS NULL AND mc.locked_until <= now()))"


def count_down_sql(messages: str, src: str, *, id_col: str = "message_id", returning: str) -> str:
    """UPDATE the messages of ``src`` (one row per consumer copy taken: ``id_col`` the message
    id): each loses that many pending consumers, and a READY one whose last consumer that was
    becomes PROCESSED. The UPDATE locks the message row, so two subscribers finishing one message
    at once are serialised and exactly one of them sees the count reach zero."""
    last = "m.pending_consumers = x.n AND m.state = 'READY'"
    return (
        f"UPDATE {messages} m SET pending_consumers = m.pending_consumers - x.n, "
        f"state = CASE WHEN {last} THEN 'PROCESSED' ELSE m.state END, "
        f"processed_at = CASE WHEN {last} THEN now() ELSE m.processed_at END "
        f"FROM (SELECT {id_col} AS id, count(*) AS n FROM {src} GROUP BY {id_col}) x "
        f"WHERE m.id = x.id RETURNING {returning}"
    )


def stat_sql(qid_param: str, src: str, column: str) -> str:
    """INSERT … ON CONFLICT adding ``count(*)`` of ``src`` to a queue's ``enqueued`` or
    ``dequeued`` counter, in this backend's shard (a CTE body or a statement)."""
    if column not in ("enqueued", "dequeued"):
        raise ValueError(column)
    enq, deq = ("count(*)", "0") if column == "enqueued" else ("0", "count(*)")
    return (
        f"INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued) "
        f"SELECT %({qid_param})s, pg_backend_pid() %% {STAT_SHARDS}, {enq}, {deq} FROM {src} "
        f"HAVING count(*) > 0 ON CONFLICT (queue_id, shard) "
        f"DO UPDATE SET {column} = aq_queue_stat.{column} + EXCLUDED.{column}"
    )


# (server, database, queue id, shard) of the counter rows this process has written (a guess:
# behind a pooler the client's backend pid is not the server's). A row, once made, lives as long
# as its queue, so a later statement of that backend may UPDATE it (stat_update_sql) rather than
# upsert it: INSERT ... ON CONFLICT DO UPDATE locks the row, then updates it (pgbench,
# synchronous_commit off: 0.208 against 0.185 ms a single enqueue). A row found missing all the
# same (a rolled-back first statement made it) is counted by count_missed.
COUNTER_ROWS: set[tuple[bytes, bytes, bytes, int, int]] = set()
# The last column of a statement whose counter CTE ``stat`` is stat_update_sql's: did it count?
COUNTED = "EXISTS (SELECT FROM stat)"


def counter_key(conn: psycopg.Connection, queue_id: int) -> tuple[bytes, bytes, bytes, int, int]:
    """The :data:`COUNTER_ROWS` key of this connection's counter row of ``queue_id``."""
    pg = conn.pgconn
    return (pg.host, pg.port, pg.db, queue_id, pg.backend_pid % STAT_SHARDS)


def stat_update_sql(qid_param: str, src: str, column: str, amount: str | None = None) -> str:
    """UPDATE of this backend's existing counter row of queue ``%(qid_param)s``, adding
    ``amount`` (default ``count(*)`` of ``src``) when ``src`` has rows; ``RETURNING 1``, so the
    statement around it (a CTE ``stat``) says whether it counted (:data:`COUNTED`). Use it only
    for a row in :data:`COUNTER_ROWS`, and :func:`count_missed` when it did not count."""
    if column not in ("enqueued", "dequeued"):
        raise ValueError(column)
    if amount is None:
        amount = f"(SELECT count(*) FROM {src})"
    return (
        f"UPDATE aq_queue_stat SET {column} = {column} + {amount} "
        f"WHERE queue_id = %({qid_param})s AND shard = pg_backend_pid() %% {STAT_SHARDS} "
        f"AND EXISTS (SELECT FROM {src}) RETURNING 1"
    )


_MISSED = {
    column: stat_sql("qid", "generate_series(1, %(n)s::int) AS g", column)
    for column in ("enqueued", "dequeued")
}


def count_missed(conn: psycopg.Connection, queue: QueueInfo, column: str, n: int) -> None:
    """Count ``n`` messages whose statement found no counter row to update. In a transaction
    (autocommit off, or a ``conn.transaction()`` block on an autocommit connection) the count
    commits or rolls back with them, and a failure is raised: the transaction is aborted, so
    its messages are not kept. Outside one, the statement that took them has committed: a
    failure is logged, never raised (the caller, told the call failed, would repeat it: a
    message enqueued twice, or one dequeued it never received)."""
    committed = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        conn.execute(_MISSED[column], {"qid": queue.id, "n": n}, prepare=True)
    except psycopg.Error as exc:
        if not committed:
            raise
        log.warning("%s counter of queue %s not written: %s", column, queue.name, exc)


def buffer_enqueue_stat_sql(qid_param: str, src: str) -> str:
    """INSERT … ON CONFLICT counting the buffered messages of ``src`` (columns ``id``,
    ``sender``) as enqueued at queue ``%(qid_param)s`` by their publisher (sender), in the
    buffer's UNLOGGED counters (V$BUFFERED_PUBLISHERS), in this backend's shard."""
    return (
        "INSERT INTO aq_buffer_stat AS s (queue_id, sender, shard, enqueued, last_msgid, "
        "last_enq, state, state_at) "
        f"SELECT %({qid_param})s, b.sender, pg_backend_pid() %% {STAT_SHARDS}, count(*), "
        f"max(b.id), now(), '{PUBLISHING}', now() FROM {src} b GROUP BY b.sender "
        "ON CONFLICT (queue_id, sender, shard) DO UPDATE SET enqueued = s.enqueued + "
        "EXCLUDED.enqueued, last_msgid = EXCLUDED.last_msgid, last_enq = EXCLUDED.last_enq, "
        "state = EXCLUDED.state, state_at = EXCLUDED.state_at"
    )


def consume_sql(queue: QueueInfo, src: str, *, where: str = "TRUE") -> str:
    """Consume the single-consumer messages listed in ``src`` (column ``id``) that are still
    READY and not leased at ``queue``: they become PROCESSED (removed later with
    :func:`remove_sql` when the queue keeps no history). A CTE body returning ``m.id``."""
    return (
        f"UPDATE {queue.messages} m SET state = 'PROCESSED', processed_at = now() "
        f"FROM {src} t WHERE m.id = t.id AND m.queue_id = {int(queue.id)} "
        f"AND m.state = 'READY' AND m.locked_until IS NULL AND ({where}) RETURNING m.id"
    )


def take_copies_sql(queue: QueueInfo, src: str, *, subs_param: str = "subs") -> str:
    """Consume the free consumer copies of the messages in ``src`` (column ``id``) held by the
    subscribers ``%(subs_param)s`` at ``queue``. A CTE body returning ``(id, sub)``; count the
    messages down with :func:`count_down_sql` over it (``id_col='id'``)."""
    return (
        f"DELETE FROM {queue.consumers} mc USING {src} t, {queue.messages} m "
        f"WHERE mc.message_id = t.id AND m.id = t.id AND m.queue_id = {int(queue.id)} "
        f"AND m.state = 'READY' AND mc.subscriber_id = ANY(%({subs_param})s) AND {FREE_COPY} "
        f"RETURNING mc.message_id AS id, mc.subscriber_id AS sub"
    )


def remove_sql(queue: QueueInfo, src: str) -> str:
    """DELETE the messages listed in ``src`` (column ``id``) and their consumer copies."""
    return (
        f"WITH gone AS (DELETE FROM {queue.consumers} mc WHERE mc.message_id IN "
        f"(SELECT id FROM {src})) DELETE FROM {queue.messages} m WHERE m.id IN (SELECT id FROM {src})"
    )


COPY_COLUMNS = (
    "id, priority, sort_pri, commit_seq, kind, type_name, correlation, sender, headers, payload, "
    "origin_site, route, tag"
)


def insert_copies_sql(
    destination: QueueInfo, src: str, *, bulk: bool = False, keep_mode: bool = False
) -> str:
    """CTEs ``ins``, ``cons`` and ``dstat``: READY copies at ``destination`` of the rows of
    ``src`` (columns :data:`COPY_COLUMNS`, ``id`` the source message), in source order, with
    ``aq$_source_msgid`` in their headers and the source's origin, route and tag (a local copy
    stays on this site), a consumer row for each of ``%(subs)s`` (and
    ``%(npend)s`` pending) and the enqueue counter. Parameters: ``dqid``, ``by_pri``, ``cseq``
    (NULL: numbered at commit), ``user``, ``npend``, ``subs``; with ``bulk``, ``job`` too: the
    copies carry the bulk key and a copy already made by an earlier attempt is skipped.
    With ``keep_mode`` (``src`` has ``delivery_mode`` too) a buffered message arrives buffered,
    in the destination's buffer (and counts in its publisher's buffered counters); otherwise
    every copy is persistent. ``ins`` returns ``(id, size, in_buffer, delivery_mode, sender)``;
    the counters are the CTEs ``dstat`` (and ``dbstat``)."""
    dq, dqt = int(destination.id), int(destination.queue_table_id)
    bulk_cols = ", bulk_job_id, bulk_source_id" if bulk else ""
    bulk_vals = ", %(job)s, k.id" if bulk else ""
    conflict = (
        "ON CONFLICT (queue_id, bulk_job_id, bulk_source_id, queue_table_id, in_buffer) "
        "WHERE bulk_job_id IS NOT NULL AND original_queue_id IS NULL DO NOTHING"
        if bulk
        else ""
    )
    if keep_mode:
        # The queue table's partitions route each copy to its leaf by in_buffer. Buffered copies
        # count where a buffered enqueue counts them: by publisher, in the buffer's counters.
        messages, consumers = message_part(dqt), consumer_part(dqt)
        mode_vals = f"k.delivery_mode, k.delivery_mode = '{BUFFERED}'"
        only = "(SELECT * FROM ins WHERE ins.delivery_mode = '{mode}')"
        stats = (
            f"dstat AS ({stat_sql('dqid', only.format(mode=PERSISTENT) + ' AS x', 'enqueued')}),\n"
            f"    dbstat AS ({buffer_enqueue_stat_sql('dqid', only.format(mode=BUFFERED))})"
        )
    else:
        messages, consumers = message_leaf(dqt), consumer_leaf(dqt)
        mode_vals = f"'{PERSISTENT}', false"
        stats = f"dstat AS ({stat_sql('dqid', 'ins', 'enqueued')})"
    return f"""
    ins AS (
        INSERT INTO {messages} (queue_id, queue_table_id, state, priority, sort_pri,
               commit_seq, kind, type_name, correlation, sender, headers, payload, enq_time,
               enq_user, attempts, pending_consumers, exception_reason, replayed, delivery_mode,
               in_buffer, origin_site, route, tag{bulk_cols})
        SELECT {dq}, {dqt}, 'READY', k.priority, %(by_pri)s * k.priority, %(cseq)s, k.kind,
               k.type_name, k.correlation, k.sender,
               k.headers || jsonb_build_object('aq$_source_msgid', k.id), k.payload, now(),
               %(user)s, 0, %(npend)s, '', false, {mode_vals}, k.origin_site, k.route,
               k.tag{bulk_vals}
        FROM {src} k ORDER BY k.sort_pri, k.commit_seq, k.id
        {conflict}
        RETURNING id, octet_length(payload::text) AS size, in_buffer, delivery_mode, sender
    ),
    cons AS (
        INSERT INTO {consumers} (message_id, subscriber_id, attempts, queue_table_id, in_buffer)
        SELECT ins.id, s.sub, 0, {dqt}, ins.in_buffer
        FROM ins CROSS JOIN unnest(%(subs)s::bigint[]) AS s(sub)
    ),
    {stats}"""


def exception_copies(
    conn: psycopg.Connection,
    message_ids: Sequence[int],
    subscriber_ids: Sequence[int | None],
    reasons: Sequence[str],
    *,
    attempts: Sequence[int | None] | None = None,
    name_consumer: bool = True,
) -> int:
    """Copies of messages in their queue's exception queue (EXPIRED, with ``reasons``): one per
    (message, subscriber). A copy for a subscriber keeps a consumer row for it, so a replay
    returns it to that subscriber only; ``name_consumer`` appends the subscriber's name to the
    reason. ``attempts``: the subscriber's own count, when the copy goes for too many of them.
    The originals are left as they are. Returns how many copies were made."""
    if not message_ids:
        return 0
    row = conn.execute(
        f"""
        WITH n AS (SELECT x.message_id, x.subscriber_id, x.reason, x.attempts,
                          nextval(pg_get_serial_sequence('aq_message', 'id')) AS copy_id
                   FROM unnest(%(mids)s::bigint[], %(sids)s::bigint[], %(reasons)s::text[],
                               %(attempts)s::int[])
                        AS x(message_id, subscriber_id, reason, attempts)),
        copy AS (
            INSERT INTO aq_message (id, queue_id, queue_table_id, state, priority, sort_pri,
                commit_seq, kind, type_name, correlation, sender, headers, payload, enq_time,
                enq_user, expiration, attempts, pending_consumers, original_queue_id,
                exception_reason, replayed, origin_site, route, tag)
            SELECT n.copy_id, q.exception_queue_id, m.queue_table_id, 'EXPIRED', m.priority,
                   m.sort_pri, m.commit_seq, m.kind, m.type_name, m.correlation, m.sender,
                   m.headers, m.payload, m.enq_time, m.enq_user, m.expiration,
                   coalesce(n.attempts, m.attempts),
                   CASE WHEN n.subscriber_id IS NULL THEN 0 ELSE 1 END, m.queue_id,
                   left(n.reason {"|| coalesce(' (consumer ' || s.name || ')', '')" if name_consumer else ""}, 200),
                   false, m.origin_site, m.route, m.tag
            FROM n JOIN aq_message m ON m.id = n.message_id
            JOIN queues_queue q ON q.id = m.queue_id
            LEFT JOIN queues_subscriber s ON s.id = n.subscriber_id
            WHERE q.exception_queue_id IS NOT NULL
            RETURNING id, queue_table_id
        ),
        cons AS (
            INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts, queue_table_id)
            SELECT n.copy_id, n.subscriber_id, 0, copy.queue_table_id
            FROM n JOIN copy ON copy.id = n.copy_id WHERE n.subscriber_id IS NOT NULL
        )
        SELECT count(*) FROM copy
        """,
        {
            "mids": list(message_ids),
            "sids": list(subscriber_ids),
            "reasons": list(reasons),
            "attempts": list(attempts) if attempts is not None else [None] * len(message_ids),
        },
    ).fetchone()
    return int(row[0])


def apply_subscriber_rules(
    conn: psycopg.Connection,
    queue: QueueInfo,
    rules: dict[int, str],
    scope: str,
    params: dict[str, Any],
    *,
    buffered: bool = False,
) -> list[tuple[int, int | None, int]]:
    """Subscribers with a rule keep only the copies their rule is TRUE for, among the messages
    of ``queue`` that ``scope`` (a condition over ``aq_message m``) selects; the pending counts
    are made right. Returns ``(id, bulk_source_id, remaining)`` of each message in scope.
    ``buffered``: the messages are in the queue table's buffer (its UNLOGGED leaves)."""
    from queues.engine.topology import rule_sql

    parts, params = [], dict(params)
    for sub_id, condition in rules.items():
        sql, p = rule_sql(condition, field="rule", prefix=f"s{int(sub_id)}_")
        parts.append(f"(mc.subscriber_id = {int(sub_id)} AND NOT (({sql}) IS TRUE))")
        params.update(p)
    qt = queue.queue_table_id
    msgs, cons = message_leaf(qt, buffered=buffered), consumer_leaf(qt, buffered=buffered)
    conn.execute(
        f"DELETE FROM {cons} mc USING {msgs} m WHERE mc.message_id = m.id AND ({scope}) "
        f"AND ({' OR '.join(parts)})",
        params,
    )
    rows = conn.execute(
        f"""
        WITH c AS (SELECT m.id, count(mc.id) AS n FROM {msgs} m
                   LEFT JOIN {cons} mc ON mc.message_id = m.id
                   WHERE {scope} GROUP BY m.id)
        UPDATE {msgs} m SET pending_consumers = c.n FROM c WHERE m.id = c.id
        RETURNING m.id, m.bulk_source_id, c.n
        """,
        params,
    ).fetchall()
    return [(int(r[0]), r[1], int(r[2])) for r in rows]


def withdraw(conn: psycopg.Connection, queue: QueueInfo, ids: Sequence[int]) -> None:
    """Take back messages this transaction enqueued at ``queue`` (nobody may receive them):
    rows and counter, as if never enqueued."""
    if not ids:
        return
    conn.execute(
        f"WITH gone AS (DELETE FROM {queue.consumers} WHERE message_id = ANY(%(ids)s)) "
        f"DELETE FROM {queue.messages} WHERE id = ANY(%(ids)s)",
        {"ids": list(ids)},
    )
    conn.execute(
        "UPDATE aq_queue_stat SET enqueued = enqueued - %s WHERE queue_id = %s AND shard = "
        f"pg_backend_pid() %% {STAT_SHARDS}",
        (len(ids), queue.id),
    )


def remove_subscriber_copies(conn: psycopg.Connection, queue_table_id: int, sub_id: int) -> None:
    """DBMS_AQADM.REMOVE_SUBSCRIBER: drop the subscriber's pending copies (in its queue and, for
    failed copies kept for it, the exception queue) and count their messages down."""
    conn.execute(
        f"WITH d AS (DELETE FROM {consumer_part(queue_table_id)} WHERE subscriber_id = %s "
        f"RETURNING message_id) "
        + count_down_sql(message_part(queue_table_id), "d", returning="m.id"),
        (sub_id,),
    )


def number_commit_time(
    conn: psycopg.Connection, queue_ids: Sequence[int], scope: str, params: dict[str, Any]
) -> None:
    """Give the messages of commit-time ``queue_ids`` that ``scope`` (a condition over
    ``aq_message``) selects one commit number, as the commit-time trigger would at COMMIT, under
    the same lock (released only once the commit is visible). Run it as the transaction's last
    statement: no other row lock may be taken after the lock (an enqueuer holding a counter row
    and waiting for the lock would deadlock)."""
    if not queue_ids:
        return
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtext('aq_commit_seq')), "
        "set_config('aq.commit_seq', nextval('aq_commit_seq')::text, true)"
    )
    conn.execute(
        "UPDATE aq_message SET commit_seq = current_setting('aq.commit_seq')::bigint "
        f"WHERE queue_id = ANY(%(ct_qids)s) AND ({scope})",
        {**params, "ct_qids": list(queue_ids)},
    )
