"""The ``queues`` suite of bench/WORKLOADS.md: the queue engine's own Python API, one psycopg
connection per client, on a single-consumer enq_time-ordered queue created under a random
``BENCH_<hex>`` prefix and dropped afterwards (purge + delete), even when a workload fails.

Each pair of workloads runs on a fresh queue of one queue table: ``enqueue_single_per_txn``
(5,000) then ``dequeue_single`` drains exactly those; ``enqueue_batch100`` (100,000) then
``dequeue_batch100`` takes the first 50,000 (the rest is purged at the end); exactly 20,000 are
loaded (untimed) into a third queue and ``dequeue_4_consumers`` runs four consumer *processes* (not
threads: the GIL would serialise the client side on a 2-core machine) until it is empty, and counts
the distinct ids they got.

``baseline=True`` adds the physical limit of the same server: the same shapes of work on a plain
table with only a primary key (single-row INSERT commits, COPY in batches of 100, DELETE ... SKIP
LOCKED single and in batches of 100), so the figures can be read against what PostgreSQL itself
does here.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from queues import engine

# bench/payload.json of the shared workloads, byte for byte (241 bytes of JSON): kept here so the
# suite runs from a plain clone.
PAYLOAD_JSON = (
    '{"order_id": 12345, "region": "EUROPE", "priority": 1, "customer": "ACME Corporation", '
    '"items": [{"sku": "X-1", "qty": 3}, {"sku": "Y-2", "qty": 1}], "note": '
    '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
)
PAYLOAD: dict[str, Any] = json.loads(PAYLOAD_JSON)

BATCH = 100
CONSUMERS = 4
FULL_SIZES: dict[str, int] = {
    "enqueue_single_per_txn": 5_000,
    "enqueue_batch100": 100_000,
    "dequeue_single": 5_000,
    "dequeue_batch100": 50_000,
    "dequeue_4_consumers": 20_000,
}
KEYS = tuple(FULL_SIZES)
# Seconds a consumer process may take to start and connect before the run is abandoned.
START_TIMEOUT_S = 120.0

Log = Callable[[str], None]


class BenchError(RuntimeError):
    """A workload did not do what it claims (wrong count, a consumer died): no figure is given."""


@dataclass(frozen=True)
class Timing:
    n: int
    seconds: float

    @property
    def rate(self) -> float:
        return round(self.n / self.seconds, 1) if self.seconds > 0 else 0.0


def sizes_for(scale: float) -> dict[str, int]:
    """The workload sizes at ``scale`` (1.0 = WORKLOADS.md); batched ones stay whole batches."""

    def size(full: int, step: int) -> int:
        return max(step, round(full * scale / step) * step)

    return {
        "enqueue_single_per_txn": size(FULL_SIZES["enqueue_single_per_txn"], 1),
        "enqueue_batch100": size(FULL_SIZES["enqueue_batch100"], BATCH),
        "dequeue_single": size(FULL_SIZES["dequeue_single"], 1),
        "dequeue_batch100": size(FULL_SIZES["dequeue_batch100"], BATCH),
        "dequeue_4_consumers": size(FULL_SIZES["dequeue_4_consumers"], CONSUMERS),
    }


def _message() -> engine.NewMessage:
    return engine.NewMessage(payload=PAYLOAD)


# --- the workloads -------------------------------------------------------------------------------


def enqueue_single(conn: psycopg.Connection, info: engine.QueueInfo, n: int) -> Timing:
    start = time.perf_counter()
    for _ in range(n):
        engine.enqueue(conn, info, [_message()])
        conn.commit()
    return Timing(n, time.perf_counter() - start)


def enqueue_batches(conn: psycopg.Connection, info: engine.QueueInfo, n: int) -> Timing:
    start = time.perf_counter()
    for _ in range(n // BATCH):
        ids = engine.enqueue(conn, info, [_message() for _ in range(BATCH)])
        conn.commit()
        if len(ids) != BATCH:
            raise BenchError(f"A batch enqueue returned {len(ids)} ids, not {BATCH}.")
    return Timing(n, time.perf_counter() - start)


def dequeue_single(conn: psycopg.Connection, info: engine.QueueInfo, n: int) -> Timing:
    start = time.perf_counter()
    for i in range(n):
        got = engine.dequeue(conn, info, mode=engine.REMOVE)
        conn.commit()
        if len(got) != 1:
            raise BenchError(f"dequeue_single found the queue empty after {i} of {n} messages.")
    return Timing(n, time.perf_counter() - start)


def dequeue_batches(conn: psycopg.Connection, info: engine.QueueInfo, n: int) -> Timing:
    start = time.perf_counter()
    for i in range(n // BATCH):
        got = engine.dequeue(conn, info, mode=engine.REMOVE, batch=BATCH)
        conn.commit()
        if len(got) != BATCH:
            raise BenchError(f"Batch {i} of dequeue_batch100 returned {len(got)} messages.")
    return Timing(n, time.perf_counter() - start)


def _consumer(
    conninfo: str,
    queue_id: int,
    barrier: Any,
    results: Any,
) -> None:
    """One of the concurrent consumers: REMOVE one message per transaction until the queue is empty.

    An empty answer is final here: nothing is enqueued during the run, and SKIP LOCKED only hides
    rows another consumer holds, which that consumer then deletes and commits.
    """
    try:
        with psycopg.connect(conninfo) as conn:
            info = engine.queue_info(conn, queue_id)
            conn.commit()
            barrier.wait(timeout=START_TIMEOUT_S)
            ids: list[int] = []
            while True:
                got = engine.dequeue(conn, info, mode=engine.REMOVE)
                conn.commit()
                if not got:
                    break
                ids.append(got[0].id)
            results.put(("ok", (ids, conn.info.backend_pid), time.monotonic()))
    except BaseException as exc:
        barrier.abort()
        results.put(("error", f"{type(exc).__name__}: {exc}", time.monotonic()))


@dataclass(frozen=True)
class ConcurrentRun:
    timing: Timing
    ids: list[int]
    backend_pids: list[int]


def dequeue_concurrent(conninfo: str, queue_id: int, n: int) -> ConcurrentRun:
    """Run :data:`CONSUMERS` consumer processes from one start line; the clock stops when the last
    one has found the queue empty. Returns the timing and every id received (duplicates kept)."""
    # spawn, not fork: a child must not inherit this process's open PostgreSQL sockets.
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(CONSUMERS + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_consumer, args=(conninfo, queue_id, barrier, results), daemon=True)
        for _ in range(CONSUMERS)
    ]
    for p in procs:
        p.start()
    try:
        try:
            barrier.wait(timeout=START_TIMEOUT_S)
        except Exception as exc:
            raise BenchError(f"A consumer failed to start: {_first_error(results)}") from exc
        start = time.monotonic()
        ids: list[int] = []
        ends: list[float] = []
        pids: list[int] = []
        for _ in procs:
            try:
                status, data, end = results.get(timeout=max(600.0, n / 10))
            except queue_mod.Empty as exc:
                raise BenchError("A consumer did not finish in time.") from exc
            if status != "ok":
                raise BenchError(f"A consumer failed: {data}")
            ids.extend(data[0])
            pids.append(data[1])
            ends.append(end)
        for p in procs:
            p.join(timeout=30)
        return ConcurrentRun(Timing(n, max(ends) - start), ids, pids)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=10)


def _first_error(results: Any) -> str:
    try:
        status, data, _ = results.get(timeout=5)
    except queue_mod.Empty:
        return "no report (the process died)"
    return data if status == "error" else "unknown"


def _message_count(conn: psycopg.Connection, queue_id: int) -> int:
    row = conn.execute(
        "SELECT count(*) FROM aq_message WHERE queue_id = %s", (queue_id,)
    ).fetchone()
    conn.commit()
    return int(row[0]) if row else 0


def dequeue_plan(conn: psycopg.Connection, info: engine.QueueInfo) -> str:
    """The plan PostgreSQL picks for the engine's single-message claim on ``info`` right now, as
    ``Node > Node(index)``: whether it walks the ordered index or sorts the whole queue decides
    the dequeue figures, and it depends on the table's statistics."""
    where, params = engine._candidate_filter(info, correlation=None, msgid=None, after=None)
    sql = (
        f"EXPLAIN (FORMAT JSON) SELECT m.id FROM aq_message m WHERE {where} "
        "AND m.locked_until IS NULL ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT 1 "
        "FOR UPDATE SKIP LOCKED"
    )
    plan = conn.execute(sql, params).fetchone()[0][0]["Plan"]  # type: ignore[index]
    conn.rollback()
    steps: list[str] = []
    while plan:
        index = plan.get("Index Name")
        steps.append(f"{plan['Node Type']}({index})" if index else plan["Node Type"])
        plan = (plan.get("Plans") or [None])[0]
    return " > ".join(steps)


def table_facts(conn: psycopg.Connection) -> dict[str, Any]:
    """What the planner knows about aq_message (autovacuum off leaves it knowing nothing)."""
    row = conn.execute(
        "SELECT c.reltuples, s.last_analyze, s.last_autoanalyze, "
        "EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'aq_message') "
        "FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
        "WHERE c.oid = 'aq_message'::regclass"
    ).fetchone()
    conn.commit()
    if row is None:
        return {}
    reltuples, last_analyze, last_autoanalyze, has_stats = row
    analyzed = last_analyze or last_autoanalyze
    return {
        "aq_message_reltuples": reltuples,
        "aq_message_last_analyze": analyzed.isoformat() if analyzed else None,
        "aq_message_column_stats": has_stats,
    }


# --- the physical limit: a plain table -----------------------------------------------------------


def plain_table_baseline(
    conninfo: str, prefix: str, sizes: dict[str, int], log: Log
) -> dict[str, Any]:
    """The same shapes of work on a logged table with only a primary key."""
    table = f"{prefix.lower()}_plain"
    out: dict[str, Any] = {}
    with psycopg.connect(conninfo) as conn:
        conn.execute(
            f"CREATE TABLE {table} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            f"payload jsonb NOT NULL, enq_time timestamptz NOT NULL DEFAULT now())"
        )
        conn.commit()
        try:
            insert = f"INSERT INTO {table} (payload) VALUES (%s)"
            n = sizes["enqueue_single_per_txn"]
            start = time.perf_counter()
            for _ in range(n):
                conn.execute(insert, (PAYLOAD_JSON,), prepare=True)
                conn.commit()
            _record(out, "baseline_insert_single_per_txn", Timing(n, time.perf_counter() - start))
            log(f"  baseline_insert_single_per_txn  {out['baseline_insert_single_per_txn']:>10}/s")

            n = sizes["enqueue_batch100"]
            start = time.perf_counter()
            for _ in range(n // BATCH):
                with conn.cursor().copy(f"COPY {table} (payload) FROM STDIN") as copy:
                    for _ in range(BATCH):
                        copy.write_row((PAYLOAD_JSON,))
                conn.commit()
            _record(out, "baseline_copy_batch100", Timing(n, time.perf_counter() - start))
            log(f"  baseline_copy_batch100          {out['baseline_copy_batch100']:>10}/s")

            take = (
                f"WITH c AS (SELECT id FROM {table} ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"DELETE FROM {table} t USING c WHERE t.id = c.id RETURNING t.id, t.payload"
            )
            n = sizes["dequeue_single"]
            start = time.perf_counter()
            for _ in range(n):
                conn.execute(take, (1,), prepare=True).fetchall()
                conn.commit()
            _record(out, "baseline_delete_single", Timing(n, time.perf_counter() - start))
            log(f"  baseline_delete_single          {out['baseline_delete_single']:>10}/s")

            n = sizes["dequeue_batch100"]
            start = time.perf_counter()
            for _ in range(n // BATCH):
                conn.execute(take, (BATCH,), prepare=True).fetchall()
                conn.commit()
            _record(out, "baseline_delete_batch100", Timing(n, time.perf_counter() - start))
            log(f"  baseline_delete_batch100        {out['baseline_delete_batch100']:>10}/s")
        finally:
            conn.rollback()
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.commit()
    return out


# --- context -------------------------------------------------------------------------------------


def server_settings(conn: psycopg.Connection) -> dict[str, Any]:
    """The server facts that decide these figures, read from the server itself."""
    names = (
        "server_version",
        "autovacuum",
        "fsync",
        "synchronous_commit",
        "wal_sync_method",
        "full_page_writes",
        "commit_delay",
        "shared_buffers",
        "wal_level",
        "max_connections",
    )
    rows = dict(
        conn.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
            (list(names),),
        ).fetchall()
    )
    conn.commit()
    return {
        "postgres_version": rows.get("server_version"),
        **{f"pg_{k}": rows.get(k) for k in names if k != "server_version"},
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "psycopg": psycopg.__version__,
        "platform": sys.platform,
    }


def _record(out: dict[str, Any], key: str, timing: Timing) -> None:
    out[key] = timing.rate
    out[f"{key}_s"] = round(timing.seconds, 3)
    out[f"{key}_n"] = timing.n


# --- the suite -----------------------------------------------------------------------------------


def run(*, scale: float = 1.0, baseline: bool = False, log: Log = print) -> dict[str, Any]:
    """Run every ``queues`` workload and return the result object (rates in messages/second)."""
    # Django (and so the services) only in the parent: consumer processes import this module
    # with nothing but psycopg and the engine.
    from queues import services

    sizes = sizes_for(scale)
    conninfo = services.conninfo()
    prefix = f"BENCH_{secrets.token_hex(4).upper()}"
    out: dict[str, Any] = {"suite": "queues", "scale": scale, "prefix": prefix}
    with psycopg.connect(conninfo) as conn:
        out.update(server_settings(conn))
    log(
        f"queues benchmark under {prefix} (scale {scale}, PostgreSQL {out['postgres_version']}, "
        f"fsync={out['pg_fsync']}, synchronous_commit={out['pg_synchronous_commit']}, "
        f"autovacuum={out['pg_autovacuum']})"
    )

    qt = services.queue_table_create(
        user=None,
        name=f"{prefix}_QT",
        sort_order="enq_time",
        comment="benchmark; dropped when the run ends",
    )
    try:
        # One queue per pair of workloads, so each starts on a queue with no history: the dequeue
        # index scan walks past the entries of removed messages until VACUUM clears them, and
        # that cost belongs to the server's vacuum policy, not to one workload's figure.
        single, batch, concurrent = (
            services.queue_create(user=None, name=f"{prefix}_{suffix}", queue_table=qt)
            for suffix in ("SINGLE", "BATCH", "CONCURRENT")
        )
        with psycopg.connect(conninfo) as conn:
            info = engine.queue_info(conn, single.pk)
            n = sizes["enqueue_single_per_txn"]
            _record(out, "enqueue_single_per_txn", enqueue_single(conn, info, n))
            log(f"  enqueue_single_per_txn  {out['enqueue_single_per_txn']:>10}/s")
            _record(out, "dequeue_single", dequeue_single(conn, info, sizes["dequeue_single"]))
            log(f"  dequeue_single          {out['dequeue_single']:>10}/s")

            info = engine.queue_info(conn, batch.pk)
            _record(out, "enqueue_batch100", enqueue_batches(conn, info, sizes["enqueue_batch100"]))
            log(f"  enqueue_batch100        {out['enqueue_batch100']:>10}/s")
            _record(out, "dequeue_batch100", dequeue_batches(conn, info, sizes["dequeue_batch100"]))
            log(f"  dequeue_batch100        {out['dequeue_batch100']:>10}/s")

            # Exactly the workload's number of messages, so "queue empty" ends the consumers.
            info = engine.queue_info(conn, concurrent.pk)
            n = sizes["dequeue_4_consumers"]
            for start in range(0, n, BATCH):
                engine.enqueue(conn, info, [_message() for _ in range(min(BATCH, n - start))])
                conn.commit()
            if _message_count(conn, info.id) != n:
                raise BenchError("The queue does not hold exactly the messages just loaded.")
            out["dequeue_plan"] = dequeue_plan(conn, info)
            out.update(table_facts(conn))

        run4 = dequeue_concurrent(conninfo, info.id, n)
        _record(out, "dequeue_4_consumers", run4.timing)
        out["dequeue_4_consumers_total"] = len(set(run4.ids))
        out["dequeue_4_consumers_duplicates"] = len(run4.ids) - len(set(run4.ids))
        # Which counter shard each consumer's backend wrote (two sharing one wait on each other).
        out["dequeue_4_consumers_stat_shards"] = sorted(
            pid % engine.STAT_SHARDS for pid in run4.backend_pids
        )
        with psycopg.connect(conninfo) as conn:
            out["dequeue_4_consumers_left"] = _message_count(conn, info.id)
        out["dequeue_4_consumers_mode"] = f"{CONSUMERS} processes, one connection each"
        log(
            f"  dequeue_4_consumers     {out['dequeue_4_consumers']:>10}/s "
            f"(total {out['dequeue_4_consumers_total']}, "
            f"duplicates {out['dequeue_4_consumers_duplicates']})"
        )

        if baseline:
            log("plain table with a primary key (the physical limit):")
            out.update(plain_table_baseline(conninfo, prefix, sizes, log))
    finally:
        _drop(services, qt)
    return out


def _drop(services: Any, qt: Any) -> None:
    """Purge every queue of the benchmark's queue table, then delete it, through the services.

    Normal queues are deleted one by one first: they point at the exception queue (a protected
    foreign key), so the exception queue can only go with the queue table after them.
    """
    queues = list(qt.queues.all())
    for q in queues:
        services.queue_purge(user=None, queue=q, condition=engine.PurgeCondition())
    for q in queues:
        if q.kind == engine.NORMAL_QUEUE:
            services.queue_delete(user=None, queue=q)
    services.queue_table_delete(user=None, queue_table=qt)
