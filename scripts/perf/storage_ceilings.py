"""How close the engine can get to the plain tables of ``bench --baseline`` at all (issue 13): for
each enqueue shape, the plain table, the bare write into the engine's own storage (the queue
table's leaf, with its dequeue index and partial indexes, nothing else: no counter, no NOTIFY,
no queue check, no Python), and the engine's call.

The bare write is the ceiling of any engine built on that storage: a target above it (say, 90% of
the plain INSERT while the bare leaf INSERT does 88%) cannot be met by the statement or the client,
only by storing messages differently. Interleaved in chunks (see engine_hot_path.py): the
persistent shapes on one connection, the buffered ones on the engine's own autocommit connection
(synchronous_commit off), as a buffered enqueue runs; compare within one run only. The rows
written are dropped with the scratch queue at the end. The bare buffer-leaf rows are READY
buffered messages of the scratch queue, so they count in the Streams pool's flow control while
the script runs: keep --n small enough (the default, 4,000 rows of 241 bytes, is about 1 MB). Usage, from the worktree with DATABASE_URL:

    python scripts/perf/storage_ceilings.py [--n 4000] [--batches 400] [--chunk 100]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_hot_path import (
    PAYLOAD,
    PAYLOAD_JSON,
    engine,
    interleaved,
    report,
    scratch_queue,
)

from queues.engine import buffered as buf
from queues.engine.storage import message_leaf

PLAIN = "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload jsonb NOT NULL, enq_time timestamptz NOT NULL DEFAULT now()"
# The columns a message row must have (no defaults in the leaf), with a plain message's values.
LEAF_COLUMNS = (
    "queue_id, queue_table_id, state, priority, sort_pri, commit_seq, kind, type_name, "
    "correlation, sender, headers, payload, enq_time, enq_user, attempts, pending_consumers, "
    "exception_reason, replayed, delivery_mode, in_buffer"
)


def leaf_values(info: engine.QueueInfo, buffered: bool) -> tuple:
    mode = "BUFFERED" if buffered else "PERSISTENT"
    # 'now' is read as the transaction's timestamp, as now() in the engine's statements.
    return (info.id, info.queue_table_id, "READY", 1, 0, 0, "USER", "", "", "", "{}",
            PAYLOAD_JSON, "now", "", 0, 0, "", False, mode, buffered)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000, help="single enqueues per variant")
    ap.add_argument("--batches", type=int, default=400, help="batches of 100 per variant")
    ap.add_argument("--chunk", type=int, default=100)
    args = ap.parse_args()
    with scratch_queue("CEIL") as (conn, info):
        conn.autocommit = True  # each single write its own committed transaction
        own = buf.own_connection(conn)  # the buffered path's connection (synchronous_commit off)
        for name, unlogged in (("ceil_plain", False), ("ceil_unlogged", True)):
            conn.execute(f"DROP TABLE IF EXISTS {name}")
            conn.execute(f"CREATE {'UNLOGGED ' if unlogged else ''}TABLE {name} ({PLAIN})")
        try:
            msg = engine.NewMessage(payload=PAYLOAD)
            marks = ", ".join(["%s"] * len(LEAF_COLUMNS.split(",")))
            leaf_insert = {
                b: f"INSERT INTO {message_leaf(info.queue_table_id, buffered=b)} ({LEAF_COLUMNS}) "
                f"VALUES ({marks})"
                for b in (False, True)
            }
            plain_insert = "INSERT INTO {} (payload) VALUES (%s)"

            def copy_leaf(c):  # type: ignore[no-untyped-def]
                with c.cursor().copy(f"COPY {info.messages} ({LEAF_COLUMNS}) FROM STDIN") as cp:
                    for _ in range(100):
                        cp.write_row(leaf_values(info, False))

            def copy_plain(c):  # type: ignore[no-untyped-def]
                with c.cursor().copy("COPY ceil_plain (payload) FROM STDIN") as cp:
                    for _ in range(100):
                        cp.write_row((PAYLOAD_JSON,))

            print(f"load average before: {os.getloadavg()}")
            single = {
                "plain INSERT": lambda c: c.execute(
                    plain_insert.format("ceil_plain"), (PAYLOAD_JSON,), prepare=True
                ),
                "bare INSERT into the leaf": lambda c: c.execute(
                    leaf_insert[False], leaf_values(info, False), prepare=True
                ),
                "engine.enqueue": lambda c: engine.enqueue(c, info, [msg]),
            }
            report(
                f"single enqueue, fsync on, {args.n} each",
                interleaved(conn, single, args.n, args.chunk),
            )
            buffered = {
                "plain UNLOGGED INSERT": lambda c: own.execute(
                    plain_insert.format("ceil_unlogged"), (PAYLOAD_JSON,), prepare=True
                ),
                "bare INSERT into the buffer leaf": lambda c: own.execute(
                    leaf_insert[True], leaf_values(info, True), prepare=True
                ),
                "engine.enqueue BUFFERED": lambda c: engine.enqueue(
                    c, info, [msg], delivery_mode=engine.BUFFERED
                ),
            }
            report(
                f"single buffered enqueue (own connection, synchronous_commit off), {args.n} each",
                interleaved(conn, buffered, args.n, args.chunk),
            )
            conn.autocommit = False  # a COPY of 100 and its commit, as bench's baseline
            batch = {
                "plain COPY of 100": copy_plain,
                "bare COPY of 100 into the leaf": copy_leaf,
                "engine.enqueue of 100": lambda c: engine.enqueue(c, info, [msg] * 100),
            }
            report(
                f"batches of 100, fsync on, {args.batches} each (batches/s)",
                interleaved(conn, batch, args.batches, max(1, args.chunk // 10)),
            )
            print(f"load average after: {os.getloadavg()}")
        finally:
            conn.rollback()
            conn.autocommit = True
            conn.execute("DROP TABLE IF EXISTS ceil_plain")
            conn.execute("DROP TABLE IF EXISTS ceil_unlogged")


if __name__ == "__main__":
    main()
