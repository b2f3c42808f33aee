"""Dequeue in REMOVE, LOCKED and BROWSE modes."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any
from uuid import UUID

import psycopg

from queues.engine import buffered as buf
from queues.engine import cursors, grouping
from queues.engine.listen import Listener
from queues.engine.rows import (
    _COLUMNS,
    ROW_ORDER,
    _candidate_filter,
    _finish_consumed_sql,
    _row_to_message,
    _sources,
    _stat,
)
from queues.engine.sets import COUNTED, COUNTER_ROWS, count_missed, counter_key
from queues.engine.topology import rule_sql, subscriber_id
from queues.engine.types import (
    BROWSE,
    BUFFERED,
    DEFAULT_LEASE_S,
    FIRST_MESSAGE,
    LOCKED,
    NEXT_MESSAGE,
    NEXT_TRANSACTION,
    PERSISTENT,
    REMOVE,
    DequeuedMessage,
    InvalidMessage,
    Position,
    QueueDisabled,
    QueueInfo,
)


def dequeue(
    conn: psycopg.Connection,
    queue: QueueInfo,
    *,
    mode: str = REMOVE,
    navigation: str = NEXT_MESSAGE,
    consumer: str | None = None,
    correlation: str | None = None,
    msgid: int | None = None,
    batch: int = 1,
    wait: float = 0.0,
    after: Position | None = None,
    lease_seconds: float = DEFAULT_LEASE_S,
    listener: Listener | None = None,
    condition: str | None = None,
    group_token: UUID | str | None = None,
    delivery_mode: str = PERSISTENT,
    in_caller_transaction: bool = False,
    msgids: Sequence[int] | None = None,
) -> list[DequeuedMessage]:
    """Take up to ``batch`` messages in the queue table's order.

    On TRANSACTIONAL queue tables a call hands out messages of one transaction group only, and
    ``group_token`` (from the previous answer) continues the group this consumer owns;
    NEXT_TRANSACTION skips the rest of it (see queues/engine/grouping.py).

    REMOVE consumes them, LOCKED leases them for ``lease_seconds`` (finish with :func:`ack` or
    :func:`release`), BROWSE only reads. NEXT_MESSAGE (the default, as in PL/SQL and OCI) continues
    after ``after``, the position of the previous call's last message; with no position it starts
    from the head, as the first NEXT_MESSAGE dequeue of an Oracle session does. FIRST_MESSAGE
    always starts from the head (strict order). Concurrent dequeuers skip each other's rows (SKIP LOCKED), so no message
    goes to two of them. With ``wait`` > 0 the call blocks up to that many seconds on the queue's
    LISTEN channel (``listener``) until a message arrives.

    ``delivery_mode`` picks persistent messages (the default, as in AQ), buffered ones (in the
    buffer or spilled) or both. A REMOVE of buffered messages (BUFFERED or
    PERSISTENT_OR_BUFFERED) runs outside the caller's transaction and is final when this returns;
    LOCKED is refused for them. ``in_caller_transaction`` keeps it in the caller's transaction,
    for the engine's movers (propagation) only. ``msgids`` narrows the candidates to those
    messages (a queue-to-dblink job takes one batch's messages for each of its subscribers).
    """
    buf.check_dequeue_mode(delivery_mode, mode)
    if mode not in (REMOVE, LOCKED, BROWSE):
        raise InvalidMessage(f"Unknown dequeue mode {mode!r}.", field="mode")
    if navigation not in (FIRST_MESSAGE, NEXT_MESSAGE, NEXT_TRANSACTION):
        raise InvalidMessage(f"Unknown navigation {navigation!r}.", field="navigation")
    # --- message grouping (queues/engine/grouping.py) ---
    token = grouping.parse_token(group_token)
    if not queue.grouped and (navigation == NEXT_TRANSACTION or token is not None):
        # ORA-25234: NEXT_TRANSACTION (and a group) needs a TRANSACTIONAL queue table.
        raise InvalidMessage(
            f"ORA-25234: NEXT_TRANSACTION navigation and group tokens need a queue table with "
            f"transactional message grouping; {queue.name}'s has none.",
            field="navigation" if navigation == NEXT_TRANSACTION else "group_token",
        )
    if queue.grouped and delivery_mode != PERSISTENT:
        # A transaction-grouping queue never holds buffered messages (AQ refuses them there).
        if delivery_mode == BUFFERED:
            raise buf.BufferedNotSupported(
                f"Queue {queue.name} is in a queue table with transactional message grouping, "
                "which holds no buffered messages: dequeue PERSISTENT messages.",
                field="delivery_mode",
            )
        delivery_mode = PERSISTENT
    # --- end message grouping ---
    if not 1 <= batch <= 10_000:
        raise InvalidMessage("Batch size must be between 1 and 10000.", field="batch")
    if wait < 0:
        raise InvalidMessage("Wait cannot be negative.", field="wait")
    if mode != BROWSE and not queue.dequeue_enabled:
        raise QueueDisabled(f"Dequeue is disabled on queue {queue.name}.", field="queue")
    sub_id: int | None = None
    if queue.multiple_consumers and not queue.is_exception:
        if not consumer:
            raise InvalidMessage(
                f"Queue {queue.name} is multi-consumer: name the consumer.", field="consumer_name"
            )
        sub_id = subscriber_id(conn, queue, consumer)
    elif consumer and not queue.is_exception:
        raise InvalidMessage(
            f"Queue {queue.name} is single-consumer: dequeue without a consumer name.",
            field="consumer_name",
        )
    start_after = after if navigation != FIRST_MESSAGE else None
    if condition:
        rule_sql(condition, field="condition", prefix="dq_")

    immediate = mode == REMOVE and delivery_mode != PERSISTENT and not in_caller_transaction
    target = buf.own_connection(conn) if immediate else conn

    def attempt() -> list[DequeuedMessage]:
        if queue.grouped:
            return grouping.dequeue_grouped(
                conn,
                queue,
                mode=mode,
                navigation=navigation,
                sub_id=sub_id,
                group_token=token,
                lease_seconds=lease_seconds,
                correlation=correlation,
                msgid=msgid,
                after=start_after,
                condition=condition,
                run=lambda group, one: _dequeue_once(
                    conn,
                    queue,
                    mode=mode,
                    sub_id=sub_id,
                    correlation=correlation,
                    msgid=one if one is not None else msgid,
                    batch=batch,
                    after=start_after if mode == BROWSE else None,
                    lease_seconds=lease_seconds,
                    condition=condition,
                    txn_group=group,
                ),
            )

        def once(c: psycopg.Connection) -> list[DequeuedMessage]:
            return _dequeue_once(
                c,
                queue,
                mode=mode,
                sub_id=sub_id,
                correlation=correlation,
                msgid=msgid,
                batch=batch,
                after=start_after,
                lease_seconds=lease_seconds,
                condition=condition,
                delivery_mode=delivery_mode,
                msgids=msgids,
            )

        if immediate and sub_id is None:
            # One statement: its own transaction on the autocommit connection.
            return once(target)
        if immediate:
            # The dequeue and the subscriber's counters commit together.
            with target.transaction():
                return once(target)
        return once(conn)

    if wait <= 0:
        return attempt()
    if listener is None:
        raise InvalidMessage("A wait needs a listener connection.", field="wait")
    # LISTEN before looking, so a commit between the look and the wait still wakes us.
    listener.listen(queue.channel)
    deadline = listener.clock() + wait
    while True:
        found = attempt()
        if found:
            return found
        remaining = deadline - listener.clock()
        if remaining <= 0:
            return []
        # End the read so the next attempt sees the newly committed message in a fresh snapshot
        # when the caller runs us in autocommit-less code; with READ COMMITTED each statement
        # already takes a new snapshot.
        listener.wait(queue.channel, remaining)


def _dequeue_once(
    conn: psycopg.Connection,
    queue: QueueInfo,
    *,
    mode: str,
    sub_id: int | None,
    correlation: str | None,
    msgid: int | None,
    batch: int,
    after: Position | None,
    lease_seconds: float,
    condition: str | None = None,
    txn_group: int | None = None,
    delivery_mode: str = PERSISTENT,
    msgids: Sequence[int] | None = None,
) -> list[DequeuedMessage]:
    where, params = _candidate_filter(
        queue,
        correlation=correlation,
        msgid=msgid,
        after=after,
        delivery_mode=delivery_mode,
        msgids=msgids,
    )
    if txn_group is not None:
        where += " AND m.txn_group = %(grp)s"  # one transaction group (grouping.py)
        params["grp"] = txn_group
    M, C = _sources(queue, delivery_mode)
    if condition:
        # AQ's deq_condition: only messages the rule condition is TRUE for (NULL is not TRUE).
        sql, cparams = rule_sql(condition, field="condition", prefix="dq_")
        where += f" AND (({sql}) IS TRUE)"
        params.update(cparams)
    params["n"] = batch
    order = "m.sort_pri, m.commit_seq, m.id"
    if sub_id is not None:
        return _dequeue_consumer(
            conn, queue, mode, sub_id, where, params, order, lease_seconds, delivery_mode
        )

    if mode == BROWSE:
        # A browse must not hand out another dequeuer's lease token.
        cols = _COLUMNS.replace("m.lock_token", "NULL::uuid")
        sql = f"SELECT {cols} FROM {M} m WHERE {where} ORDER BY {order} LIMIT %(n)s"
        return [_row_to_message(r) for r in conn.execute(sql, params, prepare=True).fetchall()]

    if mode == LOCKED:
        params["lease"] = lease_seconds
    # A persistent REMOVE counts in this backend's counter row of the queue: an UPDATE once the
    # row is known to exist (sets.COUNTER_ROWS), which the statement's last column confirms.
    key = counter_key(conn, queue.id) if mode == REMOVE and delivery_mode == PERSISTENT else None
    counter_row = key is not None and key in COUNTER_ROWS
    sql = _take_sql(
        M,
        C,
        where,
        mode,
        retain=queue.retention_time > 0 and not queue.is_exception,
        copies=queue.is_exception,
        delivery_mode=delivery_mode,
        counter_row=counter_row,
    )
    rows = cursors.execute(conn, sql, params, rows=batch).fetchall()
    if counter_row:
        # The counter's flag is the rows' last column (_row_to_message leaves it out).
        if rows and not rows[0][-1]:
            count_missed(conn, queue, "dequeued", len(rows))
    elif key is not None and rows:
        COUNTER_ROWS.add(key)
    rows.sort(key=ROW_ORDER)
    return [_row_to_message(r) for r in rows]


@lru_cache(maxsize=512)
def _take_sql(
    M: str,
    C: str,
    where: str,
    mode: str,
    *,
    retain: bool,
    copies: bool,
    delivery_mode: str,
    counter_row: bool,
) -> str:
    """The claiming statement of a dequeue without a consumer (LOCKED or REMOVE), built once per
    shape: REMOVE on a queue that keeps processed messages (``retain``) marks them PROCESSED,
    otherwise deletes them, with their consumer rows where the queue has any (``copies``: an
    exception queue keeps failed subscribers' copies)."""
    order = "m.sort_pri, m.commit_seq, m.id"
    claim = (
        f"c AS (SELECT m.id FROM {M} m WHERE {where} AND m.locked_until IS NULL "
        f"ORDER BY {order} LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
    )
    if mode == LOCKED:
        return (
            f"WITH {claim} UPDATE {M} m SET locked_until = now() + "
            f"make_interval(secs => %(lease)s), lock_token = gen_random_uuid() FROM c "
            f"WHERE m.id = c.id RETURNING {_COLUMNS}"
        )
    stat = _stat("d", delivery_mode, counter_row=counter_row)
    result = f"SELECT *, {COUNTED} FROM d" if counter_row else "SELECT * FROM d"
    if retain:
        return (
            f"WITH {claim}, d AS (UPDATE {M} m SET state = 'PROCESSED', "
            f"processed_at = now() FROM c WHERE m.id = c.id RETURNING {_COLUMNS}), "
            f"{stat} {result}"
        )
    # Single-consumer messages have no consumer rows; skip the extra delete.
    gone = f", gone AS (DELETE FROM {C} mc USING c WHERE mc.message_id = c.id)" if copies else ""
    return (
        f"WITH {claim}{gone}, d AS (DELETE FROM {M} m USING c "
        f"WHERE m.id = c.id RETURNING {_COLUMNS}), {stat} {result}"
    )


def _dequeue_consumer(
    conn: psycopg.Connection,
    queue: QueueInfo,
    mode: str,
    sub_id: int,
    where: str,
    params: dict[str, Any],
    order: str,
    lease_seconds: float,
    delivery_mode: str = PERSISTENT,
) -> list[DequeuedMessage]:
    params["sub"] = sub_id
    M, C = _sources(queue, delivery_mode)
    # A consumer row with a lock_token is leased; one with only locked_until waits out a retry delay.
    free = "(mc.locked_until IS NULL OR (mc.lock_token IS NULL AND mc.locked_until <= now()))"
    base = (
        f"FROM {C} mc JOIN {M} m ON m.id = mc.message_id "
        f"WHERE mc.subscriber_id = %(sub)s AND {where}"
    )
    if mode == BROWSE:
        cols = _COLUMNS.replace("m.lock_token", "NULL::uuid")
        sql = f"SELECT {cols} {base} ORDER BY {order} LIMIT %(n)s"
        return [_row_to_message(r) for r in conn.execute(sql, params, prepare=True).fetchall()]
    claim = (
        f"c AS (SELECT mc.id AS cid, m.id AS mid {base} AND {free} ORDER BY {order} "
        f"LIMIT %(n)s FOR UPDATE OF mc SKIP LOCKED)"
    )
    if mode == LOCKED:
        params["lease"] = lease_seconds
        sql = (
            f"WITH {claim}, l AS (UPDATE {C} mc SET locked_until = now() + "
            f"make_interval(secs => %(lease)s), lock_token = gen_random_uuid() FROM c "
            f"WHERE mc.id = c.cid RETURNING mc.message_id, mc.lock_token) "
            f"SELECT {_COLUMNS.replace('m.lock_token', 'l.lock_token')} "
            f"FROM l JOIN {M} m ON m.id = l.message_id"
        )
        rows = conn.execute(sql, params, prepare=True).fetchall()
    else:
        sql = (
            f"WITH {claim}, d AS (DELETE FROM {C} mc USING c WHERE mc.id = c.cid "
            f"RETURNING mc.message_id) {_finish_consumed_sql('d', M, delivery_mode)}"
        )
        rows = conn.execute(sql, params, prepare=True).fetchall()
    out = [_row_to_message(r) for r in rows]
    if mode == REMOVE and delivery_mode != PERSISTENT:
        taken = [m for m in out if m.delivery_mode == BUFFERED]
        if taken:
            buf.count_subscriber_dequeues(conn, sub_id, len(taken), max(m.id for m in taken))
    out.sort(key=lambda m: (m.position.sort_pri, m.position.commit_seq, m.id))
    return out


def pending_for_any(
    conn: psycopg.Connection,
    queue: QueueInfo,
    sub_ids: Sequence[int],
    *,
    batch: int,
    delivery_mode: str,
) -> list[int]:
    """The first ``batch`` messages (queue order) that any of subscribers ``sub_ids`` can take
    now; read only. A queue-to-dblink job then takes each subscriber's copies of exactly these
    (``dequeue(..., msgids=...)``), so every copy of a message crosses in the same batch."""
    if not sub_ids:
        return []
    where, params = _candidate_filter(
        queue, correlation=None, msgid=None, after=None, delivery_mode=delivery_mode
    )
    M, C = _sources(queue, delivery_mode)
    params.update(subs=list(sub_ids), n=batch)
    free = "(mc.locked_until IS NULL OR (mc.lock_token IS NULL AND mc.locked_until <= now()))"
    rows = conn.execute(
        f"SELECT m.id FROM {M} m WHERE {where} AND EXISTS (SELECT 1 FROM {C} mc "
        f"WHERE mc.message_id = m.id AND mc.subscriber_id = ANY(%(subs)s) AND {free}) "
        "ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT %(n)s",
        params,
    ).fetchall()
    return [r[0] for r in rows]
