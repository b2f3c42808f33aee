"""Message storage per queue table: the partitions of ``aq_message`` and ``aq_message_consumer``.

Oracle keeps each queue table's messages in their own table (``AQ$_<qt>``). Here both message
tables are ``PARTITION BY LIST (queue_table_id)``; each queue table's partition is itself
``PARTITION BY LIST (in_buffer)`` with a logged leaf for persistent (and spilled) messages and an
UNLOGGED leaf for buffered ones::

    aq_message ── aq_qt{id} ──┬─ aq_qt{id}_p            (in_buffer = false, logged)
                              └─ aq_qt{id}_b            (in_buffer = true, UNLOGGED)
    aq_message_consumer ── aq_qt{id}_c ──┬─ aq_qt{id}_cp
                                         └─ aq_qt{id}_cb

Names come from the queue table's id, not its name: names run to 128 characters (PostgreSQL's
identifiers stop at 63) and could be reused. The parents stay the read surface (ORM, views, pages);
a queue table's storage is created with it, dropped at once with it, truncated by a whole-queue
purge when nothing else lives there, and vacuumed by the queue monitor when it holds many dead rows
(autovacuum may be off: throughput must not depend on history). See docs/QUEUE_ENGINE.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg


def message_part(queue_table_id: int) -> str:
    return f"aq_qt{int(queue_table_id)}"


def message_leaf(queue_table_id: int, *, buffered: bool = False) -> str:
    return f"aq_qt{int(queue_table_id)}_{'b' if buffered else 'p'}"


def consumer_part(queue_table_id: int) -> str:
    return f"aq_qt{int(queue_table_id)}_c"


def consumer_leaf(queue_table_id: int, *, buffered: bool = False) -> str:
    return f"aq_qt{int(queue_table_id)}_c{'b' if buffered else 'p'}"


def leaves(queue_table_id: int) -> list[str]:
    return [
        message_leaf(queue_table_id),
        message_leaf(queue_table_id, buffered=True),
        consumer_leaf(queue_table_id),
        consumer_leaf(queue_table_id, buffered=True),
    ]


def create_storage(conn: psycopg.Connection, queue_table_id: int) -> None:
    """Create a queue table's partitions, in the caller's transaction. Idempotent: a partition
    that already exists is kept (a test database flushed by TRUNCATE keeps its partitions)."""
    qt = int(queue_table_id)
    for parent, part, leaf in (
        ("aq_message", message_part(qt), message_leaf),
        ("aq_message_consumer", consumer_part(qt), consumer_leaf),
    ):
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {part} PARTITION OF {parent} FOR VALUES IN ({qt}) "
            "PARTITION BY LIST (in_buffer)"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {leaf(qt)} PARTITION OF {part} FOR VALUES IN (false)"
        )
        # Buffered messages are lost in a crash, as AQ's are when the instance fails: no WAL.
        conn.execute(
            f"CREATE UNLOGGED TABLE IF NOT EXISTS {leaf(qt, buffered=True)} PARTITION OF {part} "
            "FOR VALUES IN (true)"
        )
    create_spilled_index(conn, qt)


def spilled_index(queue_table_id: int) -> str:
    return f"{message_leaf(queue_table_id)}_spilled"


def create_spilled_index(conn: psycopg.Connection, queue_table_id: int) -> None:
    """Spilled buffered messages in dequeue order, on the logged leaf only: a buffered dequeue
    finds them there without walking the persistent messages beside them. (On the parent the
    index would copy the whole dequeue index on the buffer leaf, and the planner does not use a
    leaf's partition bound to prove a partial index's ``NOT in_buffer``.)"""
    leaf = message_leaf(queue_table_id)
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {spilled_index(queue_table_id)} ON {leaf} "
        "(queue_id, state, sort_pri, commit_seq, id) WHERE delivery_mode = 'BUFFERED'"
    )


def lock_storage(conn: psycopg.Connection, queue_table_id: int) -> None:
    """Wait for every transaction writing a queue table's messages to end, and keep new writers
    out until the caller commits (SHARE conflicts with the ROW EXCLUSIVE lock every INSERT,
    UPDATE and DELETE takes; readers go on). The message tables have no foreign key to their
    queue (an enqueue would lock the queue's row at every commit), so deleting a queue or a queue
    table takes this before counting their messages: a message whose enqueue was in flight is
    counted (the delete is refused), and an enqueue that starts later finds the queue gone (its
    statement reads the queue once the lock is granted)."""
    qt = int(queue_table_id)
    if conn.execute("SELECT to_regclass(%s)", (message_part(qt),)).fetchone()[0] is None:
        return  # dropped with its queue table: nothing to wait for, nothing to count
    conn.execute(f"LOCK TABLE {message_part(qt)}, {consumer_part(qt)} IN SHARE MODE")


def hold_storage(conn: psycopg.Connection, queue_table_ids: list[int]) -> None:
    """Take the lock a write takes (ROW EXCLUSIVE) on queue tables' logged leaves, in the
    caller's transaction, before it checks that the queues it will write exist: a queue delete
    in flight is waited for (then the check sees it), a later one waits for this transaction
    (see :func:`lock_storage`). For writers that check the queue in one statement and write in
    another (transfers, bulk jobs); the single enqueue checks in its INSERT."""
    leaves = sorted({message_leaf(qt) for qt in queue_table_ids})
    if leaves:
        conn.execute(f"LOCK TABLE {', '.join(leaves)} IN ROW EXCLUSIVE MODE")


def drop_storage(conn: psycopg.Connection, queue_table_id: int) -> None:
    """Drop a queue table's partitions (and their rows) at once, in the caller's transaction."""
    qt = int(queue_table_id)
    # Deferred foreign-key checks queued by the same transaction (the subscribers and queues just
    # deleted) would make PostgreSQL refuse the DROP; run them now.
    conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
    conn.execute(f"DROP TABLE IF EXISTS {consumer_part(qt)}, {message_part(qt)}")


def drop_orphan_storage(conn: psycopg.Connection) -> list[int]:
    """Drop the partitions of queue tables that no longer exist, in the caller's transaction,
    and return their ids. Rows of ``queues_queuetable`` vanish without the service's drop when
    the database is flushed (``manage.py flush``, and every transactional test's teardown); their
    partitions would otherwise pile up, and every later TRUNCATE of the parents would lock them
    all (a test run ran out of lock slots that way)."""
    partitioned = conn.execute(
        "SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('aq_message')"
    ).fetchone()
    if not partitioned or not partitioned[0]:
        return []  # migrated back before the storage per queue table: nothing to drop
    rows = conn.execute(
        """
        SELECT DISTINCT substring(c.relname FROM '^aq_qt([0-9]+)')::bigint
          FROM pg_inherits i
          JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent IN ('aq_message'::regclass, 'aq_message_consumer'::regclass)
           AND c.relname ~ '^aq_qt[0-9]+(_c)?$'
        """
    ).fetchall()
    orphans = [qt for (qt,) in rows]
    if orphans:
        live = {
            qt
            for (qt,) in conn.execute(
                "SELECT id FROM queues_queuetable WHERE id = ANY(%s)", (orphans,)
            ).fetchall()
        }
        orphans = sorted(set(orphans) - live)
    for qt in orphans:
        conn.execute(f"DROP TABLE IF EXISTS {consumer_part(qt)}, {message_part(qt)}")
    return orphans


def truncate_storage(conn: psycopg.Connection, queue_table_id: int) -> None:
    """Empty a queue table's storage at once (the caller checked that only the purged queue's
    messages live there). TRUNCATE takes an ACCESS EXCLUSIVE lock until the caller commits."""
    qt = int(queue_table_id)
    conn.execute(f"TRUNCATE {consumer_part(qt)}, {message_part(qt)}")


@dataclass(frozen=True)
class Bloat:
    table: str
    live: int
    dead: int
    modified: int = 0  # rows changed since the leaf was last analysed


def bloated(conn: psycopg.Connection, *, min_dead: int, dead_ratio: float) -> list[Bloat]:
    """Leaves holding at least ``min_dead`` dead rows and at least ``dead_ratio`` dead per live
    row, or as many rows changed since their last ANALYZE (from the statistics collector, so a
    few hundred milliseconds behind). The second rule is autovacuum's analyze threshold: a leaf
    that grew by many live rows (a busy queue's processed messages) without statistics gets
    generic plans that scan all of it for one message (docs/BENCHMARKS.md, "The plan")."""
    rows = conn.execute(
        """
        SELECT s.relname, s.n_live_tup, s.n_dead_tup, s.n_mod_since_analyze
        FROM pg_stat_user_tables s
        WHERE s.schemaname = current_schema() AND s.relname ~ '^aq_qt[0-9]+_c?[pb]$'
          AND ((s.n_dead_tup >= %(min)s AND s.n_dead_tup >= %(ratio)s * s.n_live_tup)
               OR (s.n_mod_since_analyze >= %(min)s
                   AND s.n_mod_since_analyze >= %(ratio)s * s.n_live_tup))
        ORDER BY s.n_dead_tup + s.n_mod_since_analyze DESC
        """,
        {"min": min_dead, "ratio": dead_ratio},
    ).fetchall()
    return [Bloat(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]


def vacuum(autocommit_conn: psycopg.Connection, tables: list[str]) -> None:
    """VACUUM (ANALYZE) the given leaves. VACUUM cannot run inside a transaction block, so this
    takes a connection in autocommit mode; each table is its own statement, so a table dropped
    meanwhile is skipped (SKIP_LOCKED skips one another session holds)."""
    if not autocommit_conn.autocommit:
        raise ValueError("VACUUM needs a connection in autocommit mode")
    for table in tables:
        if not table.startswith("aq_qt"):
            raise ValueError(f"not a message leaf: {table}")
        try:
            autocommit_conn.execute(f"VACUUM (ANALYZE, SKIP_LOCKED) {table}")
        except psycopg.errors.UndefinedTable:
            continue
