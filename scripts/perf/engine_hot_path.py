"""Single enqueue on the per-queue-table leaf layout (issue 13): the engine against the plain table,
its statements, and copies of a leaf with other foreign keys and index sets.

Every variant does N single enqueues, one committed transaction each, on one psycopg connection,
interleaved in chunks (round-robin, rotating order) so that the shared machine's drift falls on
every variant alike: compare within one run only. Creates a scratch queue table ``PERF_<pid>_QT``
and copy tables ``perf_leaf_*`` (dropped at the end). Usage, from the worktree with DATABASE_URL:

    python scripts/perf/engine_hot_path.py [--n 3000] [--chunk 100] [--variants a,b,...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django

django.setup()

import psycopg  # noqa: E402

from console.bench.workload import PAYLOAD, PAYLOAD_JSON  # noqa: E402
from queues import engine, services  # noqa: E402

enq_mod = sys.modules["queues.engine.enqueue"]

Op = Callable[[psycopg.Connection], None]

# Secondary indexes of a leaf, by role (the definitions of migrations 0004-0010).
DEQ = "(queue_id, state, sort_pri, commit_seq, id)"
PARTIALS = {
    "waiting": "(delay_until) WHERE state = 'WAITING'",
    "expiring": "(expire_at) WHERE state = 'READY' AND expire_at IS NOT NULL",
    "leased": "(locked_until) WHERE locked_until IS NOT NULL",
    "processed": "(processed_at) WHERE state = 'PROCESSED'",
    "original": "(original_queue_id) WHERE original_queue_id IS NOT NULL",
    "txn_group": "(queue_id, txn_group) WHERE txn_group IS NOT NULL",
}
# One index for the monitor's four sweeps (due lease, delay, retention, expiry) instead of four.
DUE_EXPR = (
    "(CASE WHEN lock_token IS NOT NULL THEN locked_until WHEN state = 'WAITING' THEN delay_until "
    "WHEN state = 'PROCESSED' THEN processed_at "
    "WHEN state = 'READY' AND locked_until IS NULL THEN expire_at END)"
)
PARTIALS["due"] = f"(state, {DUE_EXPR}) WHERE {DUE_EXPR} IS NOT NULL"
BULK = (
    "(queue_id, bulk_job_id, bulk_source_id) WHERE bulk_job_id IS NOT NULL "
    "AND original_queue_id IS NULL"
)
FKS = (
    "FOREIGN KEY (queue_id) REFERENCES queues_queue(id) DEFERRABLE INITIALLY DEFERRED",
    "FOREIGN KEY (queue_table_id) REFERENCES queues_queuetable(id) DEFERRABLE INITIALLY DEFERRED",
    "FOREIGN KEY (original_queue_id) REFERENCES queues_queue(id) DEFERRABLE INITIALLY DEFERRED",
)


def make_copy(
    conn: psycopg.Connection, name: str, partials: list[str], *, bulk: bool, fk: bool
) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE TABLE {name} (LIKE aq_message INCLUDING DEFAULTS)")
    conn.execute(f"ALTER TABLE {name} ADD PRIMARY KEY (id)")
    conn.execute(f"CREATE INDEX ON {name} {DEQ}")
    for p in partials:
        conn.execute(f"CREATE INDEX ON {name} {PARTIALS[p]}")
    if bulk:
        conn.execute(f"CREATE UNIQUE INDEX ON {name} {BULK}")
    if fk:
        for fk_sql in FKS:
            conn.execute(f"ALTER TABLE {name} ADD {fk_sql}")
    conn.commit()


def one_params(info: engine.QueueInfo) -> dict:
    """The one-row statement's parameters for a message of default properties (the queue and
    the payload: the rest are constants in its text)."""
    return {"qid": info.id, "payload": PAYLOAD_JSON}


def set_params(info: engine.QueueInfo) -> dict:
    """The set-based statement's parameters for one plain message (its layout in
    queues/engine/enqueue.py: the payloads as one JSON array; no property differs from its
    default, so no records)."""
    return {
        "qid": info.id,
        "payloads": f"[{PAYLOAD_JSON}]",
        "n": 1,
        "user": "",
        "channel": info.channel,
    }


def variants(conn: psycopg.Connection, info: engine.QueueInfo) -> dict[str, Op]:
    all_partials = [p for p in PARTIALS if p != "due"]
    make_copy(conn, "perf_leaf_fk", all_partials, bulk=True, fk=True)
    make_copy(conn, "perf_leaf_nofk", all_partials, bulk=True, fk=False)
    make_copy(conn, "perf_leaf_nomon", ["original", "txn_group"], bulk=True, fk=False)
    make_copy(conn, "perf_leaf_due", ["original", "txn_group", "due"], bulk=True, fk=False)
    make_copy(conn, "perf_leaf_deq", [], bulk=False, fk=False)
    conn.execute("DROP TABLE IF EXISTS perf_plain")
    conn.execute(
        "CREATE TABLE perf_plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "payload jsonb NOT NULL, enq_time timestamptz NOT NULL DEFAULT now())"
    )
    conn.commit()
    msg = engine.NewMessage(payload=PAYLOAD)
    one = one_params(info)
    leaf = info.messages
    one_sql = enq_mod._enqueue_one_sql(
        info.queue_table_id, False, by_priority=info.by_priority, commit_time=info.commit_time
    )
    set_sql = enq_mod._enqueue_sql(
        info.queue_table_id, False, by_priority=info.by_priority, commit_time=info.commit_time
    )

    def sql_op(sql: str, params: dict) -> Op:
        return lambda c: c.execute(sql, params, prepare=True).fetchall() and None

    out: dict[str, Op] = {
        "plain table INSERT (bench baseline)": lambda c: (
            c.execute("INSERT INTO perf_plain (payload) VALUES (%s)", (PAYLOAD_JSON,), prepare=True)
            and None
        ),
        "engine.enqueue (as bench)": lambda c: engine.enqueue(c, info, [msg]) and None,
        "set-based statement on the leaf": sql_op(set_sql, set_params(info)),
    }
    if one_sql:
        out["one-row statement on the leaf"] = sql_op(one_sql, one)
        for table, label in (
            ("perf_leaf_fk", "copy: 3 FKs, 0010's 8 indexes"),
            ("perf_leaf_nofk", "copy: no FK, 0010's 8 indexes"),
            ("perf_leaf_nomon", "copy: no FK, no 4 monitor partials"),
            ("perf_leaf_due", "copy: no FK, 1 'due' for 4 partials"),
            ("perf_leaf_deq", "copy: no FK, pk + dequeue index"),
        ):
            out[f"one-row on {label}"] = sql_op(one_sql.replace(leaf, table), one)
        bare = one_sql.replace(leaf, "perf_leaf_nofk")
        no_notify = bare.replace(", pg_notify('aq_q' || %(qid)s::bigint, '')", "")
        no_stat = bare[: bare.index(",\nstat AS (")] + bare[bare.index("\nSELECT id") :]
        out["one-row, copy no FK, - NOTIFY"] = sql_op(no_notify, one)
        out["one-row, copy no FK, - counter"] = sql_op(no_stat, one)
    out["engine.enqueue validate=False"] = lambda c: (
        engine.enqueue(c, info, [msg], validate=False) and None
    )
    return out


def interleaved(
    conn: psycopg.Connection, ops: dict[str, Op], n: int, chunk: int
) -> dict[str, list[float]]:
    """Each variant n ops in chunks, round-robin with a rotating order. Per variant: overall
    rate, median chunk rate."""
    names = list(ops)
    spent = dict.fromkeys(names, 0.0)
    chunks: dict[str, list[float]] = {k: [] for k in names}
    rounds = max(1, n // chunk)
    for i in range(rounds):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            start = time.perf_counter()
            for _ in range(chunk):
                ops[name](conn)
                conn.commit()
            dt = time.perf_counter() - start
            spent[name] += dt
            chunks[name].append(chunk / dt)
    return {k: [rounds * chunk / spent[k], statistics.median(chunks[k])] for k in names}


def report(title: str, results: dict[str, list[float]]) -> None:
    print(f"\n{title}  (ops/s overall, % of the first line, median chunk ops/s)")
    base = next(iter(results.values()))[0]
    for name, (rate, med) in results.items():
        print(f"  {name:<48} {rate:>7.0f} {rate / base:>6.0%}   {med:.0f}")


@contextlib.contextmanager
def scratch_queue(prefix: str) -> Iterator[tuple[psycopg.Connection, engine.QueueInfo]]:
    """A queue in a queue table of its own (``<prefix>_<pid>_QT``), a connection and the queue's
    facts; the queue is purged and its table dropped at the end, whatever happened."""
    tag = os.getpid()
    qt = services.queue_table_create(
        user=None, name=f"{prefix}_{tag}_QT", sort_order="enq_time", comment="perf scratch"
    )
    q = services.queue_create(user=None, name=f"{prefix}_{tag}_Q", queue_table=qt)
    try:
        with psycopg.connect(services.conninfo()) as conn:
            info = engine.queue_info(conn, q.pk)
            conn.commit()
            yield conn, info
    finally:
        services.queue_purge(user=None, queue=q, condition=engine.PurgeCondition())
        services.queue_table_delete(user=None, queue_table=qt)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--variants", default="", help="comma-separated substrings to keep")
    args = ap.parse_args()
    with scratch_queue("PERF") as (conn, info):
        ops = variants(conn, info)
        if args.variants:
            keep = args.variants.split(",")
            ops = {
                k: v for i, (k, v) in enumerate(ops.items()) if i == 0 or any(s in k for s in keep)
            }
        print(f"load average before: {os.getloadavg()}")
        report(
            f"single enqueue, one committed txn each, {args.n} per variant in chunks of "
            f"{args.chunk}",
            interleaved(conn, ops, args.n, args.chunk),
        )
        print(f"load average after: {os.getloadavg()}")
        for t in ("fk", "nofk", "nomon", "due", "deq"):
            conn.execute(f"DROP TABLE IF EXISTS perf_leaf_{t}")
        conn.execute("DROP TABLE IF EXISTS perf_plain")
        conn.commit()


if __name__ == "__main__":
    main()
