"""Message grouping on TRANSACTIONAL queue tables (DBMS_AQADM's ``message_grouping =>
TRANSACTIONAL``).

Groups. Every message one transaction enqueues into a queue of such a table carries that
transaction's id (``txn_group``, its xid8, stamped in the same transaction), so a group exists
exactly when its transaction committed: a crash or rollback mid-enqueue leaves no part of it.

Ownership. Dequeue (REMOVE or LOCKED) hands out one group at a time, in the queue table's order,
and never more than that group in one call (AQ's NEXT_MESSAGE within a group). The consumer that
takes a group's first message owns the group: a row in ``aq_message_group`` keyed by (queue,
subscriber, group) holds its ``owner_token`` and a lease of ``lease_seconds``, renewed by every
further dequeue of the group. Other consumers skip groups with a live lease, and two consumers
claiming the same free group at once are kept apart by a transaction-scoped advisory lock taken
before the lease is read or written. The owner continues with its token (``group_token``);
the dequeue that hands out the group's last message says so (``last_in_group``, AQ's end of
group) and drops the lease. If the owner goes away, its lease runs out and the rest of the group
goes whole, from its next message, to the next consumer: a group is never handed to two consumers
at the same time. A continuation after the end, or after the lease ran out, is ORA-25235
(:class:`EndOfGroup`). NEXT_TRANSACTION gives up the current group (its remaining messages stay in
the queue, as AQ skips them) and claims the next one.

Multi-consumer queue tables: each subscriber's copies form their own groups and leases, so every
subscriber gets whole groups. Messages that arrive without a group (moved in by a propagation) are
groups of one. BROWSE takes no lease and shows each message's group, its place in the group and
the group's size (among the group's messages still stored) and whether it is the group's last.
Dequeue's place and size count what this consumer was handed of the group and what is left of it.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import psycopg

from queues.engine.rows import _candidate_filter
from queues.engine.topology import rule_sql
from queues.engine.types import (
    BROWSE,
    FIRST_MESSAGE,
    NEXT_TRANSACTION,
    DequeuedMessage,
    EndOfGroup,
    InvalidMessage,
    Position,
    QueueInfo,
)

# How many candidate heads one claim looks at before giving up (each is a group start).
_CANDIDATES = 64
_NO_OWNER = UUID(int=0)

# Runs the ordinary claim of ``queues/engine/dequeue.py`` restricted to one group (or to one
# message of no group): ``run(txn_group, msgid)``.
Runner = Callable[[int | None, int | None], list[DequeuedMessage]]


def stamp_groups(conn: psycopg.Connection, queue: QueueInfo, ids: Sequence[int]) -> None:
    """Mark the messages just enqueued as the current transaction's group (same transaction)."""
    if queue.grouped and ids:
        conn.execute(
            f"UPDATE {queue.messages} SET txn_group = pg_current_xact_id()::text::bigint "
            "WHERE id = ANY(%s)",
            (list(ids),),
        )


def parse_token(token: UUID | str | None) -> UUID | None:
    if token is None or token == "":
        return None
    if isinstance(token, UUID):
        return token
    try:
        return UUID(str(token))
    except ValueError as exc:
        raise InvalidMessage(
            "Not a group token: give the group_token of an earlier dequeue answer.",
            field="group_token",
        ) from exc


def dequeue_grouped(
    conn: psycopg.Connection,
    queue: QueueInfo,
    *,
    mode: str,
    navigation: str,
    sub_id: int | None,
    group_token: UUID | None,
    lease_seconds: float,
    correlation: str | None,
    msgid: int | None,
    after: Position | None,
    condition: str | None,
    run: Runner,
) -> list[DequeuedMessage]:
    """One grouped dequeue attempt; see the module docstring."""
    if mode == BROWSE:
        return annotate(conn, queue, run(None, msgid))
    sub = sub_id or 0
    skip: int | None = None
    if group_token is not None:
        lease = conn.execute(
            "SELECT txn_group, handed FROM aq_message_group WHERE queue_id = %s "
            "AND subscriber_id = %s AND owner_token = %s AND leased_until > now()",
            (queue.id, sub, group_token),
        ).fetchone()
        if navigation == NEXT_TRANSACTION:
            if lease is not None:
                # Give the rest of the group up; its messages stay READY for the next claimer.
                _drop(conn, queue, sub, lease[0])
                skip = lease[0]
        elif navigation != FIRST_MESSAGE:
            if lease is None:
                raise EndOfGroup(
                    f"ORA-25235: fetched all messages of the current transaction group from "
                    f"{queue.name} "
                    "(or its lease ran out): continue with NEXT_TRANSACTION.",
                    field="group_token",
                )
            group, handed = lease
            _lock(conn, queue, sub, group, wait=True)
            got = run(group, None)
            if not got and not _remaining(conn, queue, sub, group, []):
                _drop(conn, queue, sub, group)
                raise EndOfGroup(
                    f"ORA-25235: fetched all messages of transaction group {group} from "
                    f"{queue.name}: "
                    "continue with NEXT_TRANSACTION.",
                    field="group_token",
                )
            return _finish(conn, queue, sub, group, group_token, handed, got, lease_seconds)
    token = group_token or uuid.uuid4()
    for group, head in _candidate_groups(
        conn, queue, sub_id, token, correlation, msgid, after, condition, skip
    ):
        if group is None:
            got = run(None, head)
            if got:
                return [
                    dataclasses.replace(m, group_position=1, group_size=1, last_in_group=True)
                    for m in got
                ]
            continue
        if not _lock(conn, queue, sub, group, wait=False):
            continue
        handed = _claim(conn, queue, sub, group, token, lease_seconds)
        if handed is None:
            continue
        got = run(group, None)
        if not got:
            _drop(conn, queue, sub, group)
            continue
        return _finish(conn, queue, sub, group, token, handed, got, lease_seconds)
    return []


def _candidate_groups(
    conn: psycopg.Connection,
    queue: QueueInfo,
    sub_id: int | None,
    token: UUID,
    correlation: str | None,
    msgid: int | None,
    after: Position | None,
    condition: str | None,
    skip: int | None,
) -> list[tuple[int | None, int]]:
    """Groups with a message this consumer could take now, no live lease of another owner, in the
    queue table's order: (group, first such message id)."""
    where, params = _candidate_filter(queue, correlation=correlation, msgid=msgid, after=after)
    if condition:
        sql, cparams = rule_sql(condition, field="condition", prefix="dq_")
        where += f" AND (({sql}) IS TRUE)"
        params.update(cparams)
    params.update(gsub=sub_id or 0, gtok=token, n=_CANDIDATES, skip=skip)
    owned = (
        "NOT EXISTS (SELECT 1 FROM aq_message_group g WHERE g.queue_id = m.queue_id "
        "AND g.subscriber_id = %(gsub)s AND g.txn_group = m.txn_group "
        "AND g.leased_until > now() AND g.owner_token <> %(gtok)s)"
    )
    skipped = "(%(skip)s::bigint IS NULL OR m.txn_group IS DISTINCT FROM %(skip)s)"
    if sub_id is not None:
        params["sub"] = sub_id
        src = (
            f"FROM {queue.consumers} mc JOIN {queue.messages} m ON m.id = mc.message_id "
            "WHERE mc.subscriber_id = %(sub)s AND (mc.locked_until IS NULL OR "
            "(mc.lock_token IS NULL AND mc.locked_until <= now()))"
        )
    else:
        src = f"FROM {queue.messages} m WHERE m.locked_until IS NULL"
    rows = conn.execute(
        f"SELECT m.txn_group, m.id {src} AND {where} AND {owned} AND {skipped} "
        f"ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT %(n)s",
        params,
    ).fetchall()
    seen: set[int] = set()
    out: list[tuple[int | None, int]] = []
    for group, mid in rows:
        if group is None:
            out.append((None, mid))
        elif group not in seen:
            seen.add(group)
            out.append((group, mid))
    return out


def _lock(conn: psycopg.Connection, queue: QueueInfo, sub: int, group: int, *, wait: bool) -> bool:
    """The group's advisory lock for this transaction: only its holder reads or writes the lease."""
    fn = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    row = conn.execute(
        f"SELECT {fn}(hashtextextended(%s, 0))::text", (f"aqg:{queue.id}:{sub}:{group}",)
    ).fetchone()
    return wait or row[0] == "true"


def _claim(
    conn: psycopg.Connection,
    queue: QueueInfo,
    sub: int,
    group: int,
    token: UUID,
    lease_seconds: float,
) -> int | None:
    """Take the group's lease unless another owner's is live; return how many of the group's
    messages were handed out before (by an owner whose lease ran out)."""
    row = conn.execute(
        """
        INSERT INTO aq_message_group (queue_id, subscriber_id, txn_group, owner_token,
                                      leased_until, handed)
        VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s), 0)
        ON CONFLICT (queue_id, subscriber_id, txn_group) DO UPDATE
            SET owner_token = EXCLUDED.owner_token, leased_until = EXCLUDED.leased_until
            WHERE aq_message_group.leased_until <= now()
               OR aq_message_group.owner_token = EXCLUDED.owner_token
        RETURNING handed
        """,
        (queue.id, sub, group, token, lease_seconds),
    ).fetchone()
    return None if row is None else row[0]


def _drop(conn: psycopg.Connection, queue: QueueInfo, sub: int, group: int) -> None:
    conn.execute(
        "DELETE FROM aq_message_group WHERE queue_id = %s AND subscriber_id = %s "
        "AND txn_group = %s",
        (queue.id, sub, group),
    )


def _remaining(
    conn: psycopg.Connection, queue: QueueInfo, sub: int, group: int, taken: list[int]
) -> int:
    """The group's messages still to hand out to this consumer (not consumed, not leased)."""
    if sub:
        sql = (
            f"SELECT count(*) FROM {queue.consumers} mc JOIN {queue.messages} m ON m.id = "
            "mc.message_id WHERE mc.subscriber_id = %(sub)s AND m.queue_id = %(qid)s "
            "AND m.txn_group = %(grp)s AND mc.lock_token IS NULL AND m.id <> ALL(%(taken)s)"
        )
    else:
        sql = (
            f"SELECT count(*) FROM {queue.messages} m WHERE m.queue_id = %(qid)s "
            "AND m.txn_group = %(grp)s AND m.state IN ('READY', 'WAITING') "
            "AND m.lock_token IS NULL AND m.id <> ALL(%(taken)s)"
        )
    params = {"sub": sub, "qid": queue.id, "grp": group, "taken": taken}
    return conn.execute(sql, params).fetchone()[0]


def _finish(
    conn: psycopg.Connection,
    queue: QueueInfo,
    sub: int,
    group: int,
    token: UUID,
    handed: int,
    got: list[DequeuedMessage],
    lease_seconds: float,
) -> list[DequeuedMessage]:
    """Renew the lease (or drop it after the group's last message) and label the messages."""
    left = _remaining(conn, queue, sub, group, [m.id for m in got])
    if left:
        conn.execute(
            "UPDATE aq_message_group SET handed = handed + %s, "
            "leased_until = now() + make_interval(secs => %s) "
            "WHERE queue_id = %s AND subscriber_id = %s AND txn_group = %s",
            (len(got), lease_seconds, queue.id, sub, group),
        )
    else:
        _drop(conn, queue, sub, group)
    last = len(got) - 1
    return [
        dataclasses.replace(
            m,
            transaction_group=group,
            group_position=handed + i + 1,
            group_size=handed + len(got) + left,
            last_in_group=(i == last and not left),
            group_token=token,
        )
        for i, m in enumerate(got)
    ]


def annotate(
    conn: psycopg.Connection, queue: QueueInfo, messages: list[DequeuedMessage]
) -> list[DequeuedMessage]:
    """Browse: each message's group, its place among the group's stored messages, how many those
    are and whether it is the group's last."""
    if not messages:
        return messages
    rows = conn.execute(
        f"""
        SELECT m.id, m.txn_group,
               (SELECT count(*) FROM {queue.messages} p WHERE p.queue_id = m.queue_id
                AND p.txn_group = m.txn_group
                AND (p.sort_pri, p.commit_seq, p.id) <= (m.sort_pri, m.commit_seq, m.id)),
               NOT EXISTS (SELECT 1 FROM {queue.messages} p WHERE p.queue_id = m.queue_id
                AND p.txn_group = m.txn_group
                AND (p.sort_pri, p.commit_seq, p.id) > (m.sort_pri, m.commit_seq, m.id)),
               (SELECT count(*) FROM {queue.messages} p WHERE p.queue_id = m.queue_id
                AND p.txn_group = m.txn_group)
        FROM {queue.messages} m WHERE m.id = ANY(%s)
        """,
        ([m.id for m in messages],),
    ).fetchall()
    by_id: dict[int, tuple[Any, ...]] = {r[0]: r for r in rows}
    out = []
    for m in messages:
        _, group, pos, last, size = by_id.get(m.id, (m.id, None, None, False, None))
        if group is None:
            pos, last, size = 1, True, 1
        out.append(
            dataclasses.replace(
                m, transaction_group=group, group_position=pos, group_size=size, last_in_group=last
            )
        )
    return out


def expire_leases(
    conn: psycopg.Connection, *, limit: int = 10_000, tables: Sequence[int] | None = None
) -> int:
    """The queue monitor's clean-up of leases that ran out (a lease no row points at any more),
    of the queues of ``tables`` (queue table ids; None: all)."""
    only = (
        ""
        if tables is None
        else " AND queue_id IN (SELECT id FROM queues_queue WHERE queue_table_id = ANY(%(tables)s))"
    )
    return conn.execute(
        f"""
        DELETE FROM aq_message_group WHERE id IN (
            SELECT id FROM aq_message_group WHERE leased_until <= now(){only}
            LIMIT %(n)s FOR UPDATE SKIP LOCKED)
        """,
        {"n": limit, "tables": list(tables) if tables is not None else None},
    ).rowcount
