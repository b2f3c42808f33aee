"""Measure the storage shapes for message tables (issue 13, "Storage per queue table").

Shapes, each built in a scratch schema from the live ``aq_message`` definition (same columns and
indexes), with four queue tables' worth of storage:

- ``single``: one table for every queue table (the layout before migration 0009);
- ``parent``: ``PARTITION BY LIST (queue_table_id)``, each partition ``PARTITION BY LIST
  (in_buffer)`` with a logged and an UNLOGGED leaf; statements name the parent;
- ``leaf``: the same partitions, statements name the logged leaf directly;
- ``table``: a plain table per queue table.

Workloads, as the engine runs them (prepared statements, one connection, fsync'd commits):
single-row INSERT per transaction, single-row ``DELETE … FOR UPDATE SKIP LOCKED`` per transaction,
and both in batches of 100 rows. Shapes run interleaved, ``--rounds`` times, best round kept.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/aq_x python scripts/storage_shapes.py
"""

from __future__ import annotations

import argparse
import os
import time

import psycopg

SCHEMA = "aq_shapes"
QTS: tuple[int, ...] = ()
INDEXES = [
    "(queue_id, state, sort_pri, commit_seq, id)",
    "(delay_until) WHERE state = 'WAITING'",
    "(expire_at) WHERE state = 'READY' AND expire_at IS NOT NULL",
    "(locked_until) WHERE locked_until IS NOT NULL",
    "(processed_at) WHERE state = 'PROCESSED'",
    "(original_queue_id) WHERE original_queue_id IS NOT NULL",
]


def build(conn: psycopg.Connection, qts: int) -> None:
    global QTS
    QTS = tuple(range(1, qts + 1))
    conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {SCHEMA}")
    conn.execute(f"CREATE SEQUENCE {SCHEMA}.ids")
    like = "(LIKE public.aq_message INCLUDING DEFAULTS)"
    nextval = f"nextval('{SCHEMA}.ids')"

    def plain(name: str) -> None:
        conn.execute(f"CREATE TABLE {SCHEMA}.{name} {like}")
        conn.execute(f"ALTER TABLE {SCHEMA}.{name} ALTER id SET DEFAULT {nextval}")
        conn.execute(f"ALTER TABLE {SCHEMA}.{name} ADD PRIMARY KEY (id)")
        for i, cols in enumerate(INDEXES):
            conn.execute(f"CREATE INDEX {name}_i{i} ON {SCHEMA}.{name} {cols}")

    plain("single")
    for qt in QTS:
        plain(f"t{qt}")
    conn.execute(f"CREATE TABLE {SCHEMA}.part {like} PARTITION BY LIST (queue_table_id)")
    conn.execute(f"ALTER TABLE {SCHEMA}.part ALTER id SET DEFAULT {nextval}")
    conn.execute(f"ALTER TABLE {SCHEMA}.part ADD PRIMARY KEY (id, queue_table_id, in_buffer)")
    for i, cols in enumerate(INDEXES):
        conn.execute(f"CREATE INDEX part_i{i} ON {SCHEMA}.part {cols}")
    for qt in QTS:
        conn.execute(
            f"CREATE TABLE {SCHEMA}.qt{qt} PARTITION OF {SCHEMA}.part FOR VALUES IN ({qt}) "
            "PARTITION BY LIST (in_buffer)"
        )
        conn.execute(
            f"CREATE TABLE {SCHEMA}.qt{qt}_p PARTITION OF {SCHEMA}.qt{qt} FOR VALUES IN (false)"
        )
        conn.execute(
            f"CREATE UNLOGGED TABLE {SCHEMA}.qt{qt}_b PARTITION OF {SCHEMA}.qt{qt} FOR VALUES IN (true)"
        )
    conn.commit()


INSERT = (
    "INSERT INTO {t} (queue_id, queue_table_id, state, priority, sort_pri, commit_seq, kind, "
    "type_name, correlation, sender, headers, payload, enq_time, enq_user, attempts, "
    "pending_consumers, exception_reason, replayed) "
    "SELECT %(qid)s, %(qt)s, 'READY', 1, 0, 0, 'USER', '', '', '', '{{}}', "
    "jsonb_build_object('n', g), now(), '', 0, 0, '', false FROM generate_series(1, %(n)s) g "
    "RETURNING id"
)
DELETE = (
    "WITH c AS (SELECT m.id FROM {t} m WHERE m.queue_id = %(qid)s AND m.state = 'READY' "
    "AND m.commit_seq IS NOT NULL AND m.locked_until IS NULL "
    "ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT %(n)s FOR UPDATE SKIP LOCKED) "
    "DELETE FROM {t} m USING c WHERE m.id = c.id {extra} RETURNING m.id, m.payload::text"
)


def target(shape: str, qt: int) -> tuple[str, str]:
    """The relation a statement names, and the extra predicate it carries."""
    if shape == "single":
        return f"{SCHEMA}.single", ""
    if shape == "table":
        return f"{SCHEMA}.t{qt}", ""
    if shape == "leaf":
        return f"{SCHEMA}.qt{qt}_p", ""
    # Through the parent the engine also names the partition keys, so the planner can prune.
    # A parameter, as the engine would pass it: prepared statements get a generic plan after five
    # runs, which prunes at executor start-up instead of at planning.
    return f"{SCHEMA}.part", "AND m.queue_table_id = %(qt)s AND NOT m.in_buffer"


def run(conn: psycopg.Connection, shape: str, rows: int, batch: int) -> tuple[float, float]:
    """Rows per second for enqueue and dequeue of ``rows`` rows in transactions of ``batch``."""
    qt = len(QTS) // 2  # in the middle, so routing cannot luck into the first partition
    t, extra = target(shape, qt)
    ins, dele = INSERT.format(t=t), DELETE.format(t=t, extra=extra)
    params = {"qid": 10 + qt, "qt": qt, "n": batch}
    start = time.perf_counter()
    for _ in range(rows // batch):
        conn.execute(ins, params, prepare=True).fetchall()
        conn.commit()
    enq = rows / (time.perf_counter() - start)
    start = time.perf_counter()
    got = 0
    for _ in range(rows // batch):
        got += len(conn.execute(dele, params, prepare=True).fetchall())
        conn.commit()
    deq = rows / (time.perf_counter() - start)
    assert got == rows, (shape, got, rows)
    return enq, deq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--single-rows", type=int, default=1500)
    ap.add_argument("--batch-rows", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queue-tables", type=int, default=50)
    ap.add_argument(
        "--sync-off",
        action="store_true",
        help="synchronous_commit off: takes the disk out, leaving the statements' CPU cost",
    )
    args = ap.parse_args()
    url = os.environ["DATABASE_URL"]
    shapes = ("single", "parent", "leaf", "table")
    best: dict[tuple[str, str], float] = {}
    with psycopg.connect(url) as conn:
        build(conn, args.queue_tables)
        if args.sync_off:
            conn.execute("SET synchronous_commit = off")
        for _ in range(args.rounds):
            for shape in shapes:
                for batch, rows in ((1, args.single_rows), (100, args.batch_rows)):
                    enq, deq = run(conn, shape, rows, batch)
                    for key, val in ((f"enqueue x{batch}", enq), (f"dequeue x{batch}", deq)):
                        best[(shape, key)] = max(best.get((shape, key), 0.0), val)
        conn.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
        conn.commit()
    keys = ("enqueue x1", "dequeue x1", "enqueue x100", "dequeue x100")
    print("| rows/s | " + " | ".join(shapes) + " |")
    print("|---|" + "---|" * len(shapes))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{best[(s, key)]:,.0f}" for s in shapes) + " |")


if __name__ == "__main__":
    main()
