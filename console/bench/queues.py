"""The ``queues`` suite of bench/WORKLOADS.md: the queue engine's own Python API, one psycopg
connection per client, on single-consumer enq_time-ordered queues of one queue table created under
a random ``BENCH_<hex>`` prefix and dropped afterwards (purge + delete), even when a workload
fails.

Each pair of workloads has a queue of its own: ``enqueue_single_per_txn`` (5,000) then
``dequeue_single`` drains exactly those; ``enqueue_batch100`` (100,000) then ``dequeue_batch100``
takes the first 50,000 (the rest is drained untimed at the end of the run); exactly 20,000 are
loaded (untimed) into a third queue and ``dequeue_4_consumers`` runs four consumer processes until
it is empty, and counts the distinct ids they got; ``enqueue_single_buffered`` and
``dequeue_single_buffered`` do the single pair with ``delivery_mode=BUFFERED`` on a fourth queue,
when the engine has buffered messages.

The peers (``--peers``: PGMQ and PgQ, console/bench/peers.py) and the plain tables
(``--baseline``: console/bench/baseline.py) run the same shape right after each engine workload,
so the machine's drift hits every side alike. ``--repeat K`` runs all of it K times on the same
queues; ``--history M`` puts M million consumed messages through those queues after the first run,
and the queue monitor gets ``--settle`` seconds before each later run (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import inspect
import os
import platform
import secrets
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import psycopg

from console.bench import targets
from console.bench.baseline import PlainTables
from console.bench.consumers import Take, run_consumers
from console.bench.peers import (
    PGMQ_WORKLOADS,
    PGQ_WORKLOADS,
    Pgmq,
    Pgq,
    add_ratios,
    check_installed,
)
from console.bench.repeats import combine, monitor_settle, spread
from console.bench.workload import (
    BATCH,
    CONSUMERS,
    FULL_SIZES,
    PAYLOAD,
    PAYLOAD_JSON,
    ROUNDS,
    BenchError,
    Log,
    Timing,
    interleaved,
    record,
    sizes_for,
)
from queues import engine

__all__ = ["FULL_SIZES", "PAYLOAD", "PAYLOAD_JSON", "BenchError", "run", "sizes_for"]

BUFFERED_KEYS = ("enqueue_single_buffered", "dequeue_single_buffered")
# Messages per enqueue and per dequeue while --history loads consumed messages (not timed).
HISTORY_BATCH = 1_000
# The queue monitor's default settling time after --history: the "a minute".
SETTLE_S = 60.0


def buffered_supported() -> bool:
    """Whether this engine takes ``delivery_mode`` on enqueue and dequeue (issue 13 adds it)."""
    return all(
        "delivery_mode" in inspect.signature(fn).parameters
        for fn in (engine.enqueue, engine.dequeue)
    )


def _delivery(buffered: bool) -> dict[str, str]:
    return {"delivery_mode": getattr(engine, "BUFFERED", "BUFFERED")} if buffered else {}


def _message() -> engine.NewMessage:
    return engine.NewMessage(payload=PAYLOAD)


# --- the engine's workloads ----------------------------------------------------------------------


def enqueue_single(
    conn: psycopg.Connection, info: engine.QueueInfo, n: int, *, buffered: bool = False
) -> Timing:
    mode = _delivery(buffered)
    start = time.perf_counter()
    for _ in range(n):
        engine.enqueue(conn, info, [_message()], **mode)
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


def dequeue_single(
    conn: psycopg.Connection, info: engine.QueueInfo, n: int, *, buffered: bool = False
) -> Timing:
    mode = _delivery(buffered)
    start = time.perf_counter()
    for i in range(n):
        got = engine.dequeue(conn, info, mode=engine.REMOVE, **mode)
        conn.commit()
        if len(got) != 1:
            raise BenchError(f"A single dequeue found the queue empty after {i} of {n} messages.")
    return Timing(n, time.perf_counter() - start)


def dequeue_batches(conn: psycopg.Connection, info: engine.QueueInfo, n: int) -> Timing:
    start = time.perf_counter()
    for i in range(n // BATCH):
        got = engine.dequeue(conn, info, mode=engine.REMOVE, batch=BATCH)
        conn.commit()
        if len(got) != BATCH:
            raise BenchError(f"Batch {i} of dequeue_batch100 returned {len(got)} messages.")
    return Timing(n, time.perf_counter() - start)


def drain(conn: psycopg.Connection, info: engine.QueueInfo, *, buffered: bool = False) -> int:
    """Consume whatever the queue still holds (untimed), so the next run starts on an empty queue
    whose history is consumed messages, as a real queue's is."""
    mode, taken = _delivery(buffered), 0
    while got := engine.dequeue(conn, info, mode=engine.REMOVE, batch=HISTORY_BATCH, **mode):
        conn.commit()
        taken += len(got)
    conn.commit()
    return taken


def engine_consumer(conn: psycopg.Connection, queue_id: int) -> Take:
    """Opener of an engine ``dequeue_4_consumers`` consumer (runs in the child process, which
    imports this module with nothing but psycopg and the engine: no Django)."""
    info = engine.queue_info(conn, queue_id)
    conn.commit()
    conn.autocommit = True  # one dequeue, one committed transaction (as the peers' consumers)

    def take() -> int | None:
        got = engine.dequeue(conn, info, mode=engine.REMOVE)
        conn.commit()
        return got[0].id if got else None

    return take


def dequeue_plan(conn: psycopg.Connection, info: engine.QueueInfo) -> str:
    """The plan PostgreSQL picks for the engine's single-message claim on ``info`` right now, as
    ``Node > Node(index)``: whether it walks the ordered index or sorts the whole queue decides
    the dequeue figures, and it depends on the table's statistics. Reads the engine's own filter
    on the queue table's logged leaf, the relation a persistent dequeue claims from (through the
    parent, the plan would be another: a Sort over the Append of both leaves)."""
    where, params = engine._candidate_filter(info, correlation=None, msgid=None, after=None)
    sql = (
        f"EXPLAIN (FORMAT JSON) SELECT m.id FROM {info.messages} m WHERE {where} "
        "AND m.locked_until IS NULL ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT 1 "
        "FOR UPDATE SKIP LOCKED"
    )
    try:
        plan = conn.execute(sql, params).fetchone()[0][0]["Plan"]  # type: ignore[index]
    finally:
        conn.rollback()
    steps: list[str] = []
    while plan:
        index = plan.get("Index Name")
        steps.append(f"{plan['Node Type']}({index})" if index else plan["Node Type"])
        plan = (plan.get("Plans") or [None])[0]
    return " > ".join(steps)


def table_facts(conn: psycopg.Connection) -> dict[str, Any]:
    """What the planner knows about aq_message (autovacuum off leaves it knowing nothing); empty
    when the engine keeps its messages elsewhere."""
    row = conn.execute(
        "SELECT c.reltuples, s.last_analyze, s.last_autoanalyze, "
        "EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'aq_message') "
        "FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
        "WHERE c.oid = to_regclass('aq_message') AND c.relkind = 'r'"
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


# --- context -------------------------------------------------------------------------------------

# What issue 13 asks to record beside every side-by-side run (SHOW of each).
SERVER_SHOW = ("fsync", "synchronous_commit", "autovacuum", "shared_buffers", "wal_level")


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


# --- the suite -----------------------------------------------------------------------------------


@dataclass
class Suite:
    """One command's topology and options; the queues live across the repeats."""

    conninfo: str
    prefix: str
    sizes: dict[str, int]
    baseline: bool
    peers: bool
    buffered: bool
    # Chunks per compared workload, the sides taking turns (workload.interleaved); 1: each
    # side's whole workload in turn, the engine's first (the protocol before 2026-11-27).
    rounds: int = ROUNDS
    queues: dict[str, Any] = field(default_factory=dict)  # role -> queues.models.Queue

    def info(self, conn: psycopg.Connection, role: str) -> engine.QueueInfo:
        """The queue's facts, read in a transaction that ends here: a session left idle in
        transaction through the single workloads made the engine's (and the plain table's, in
        the same database) single dequeues decay along the drain, 704 to 319/s over 5,000."""
        info = engine.queue_info(conn, self.queues[role].pk)
        conn.commit()
        return info


def run(
    *,
    scale: float = 1.0,
    baseline: bool = False,
    log: Log = print,
    peers: bool = False,
    repeat: int = 1,
    history: float = 0.0,
    settle: float | None = None,
    rounds: int = ROUNDS,
) -> dict[str, Any]:
    """Run every ``queues`` workload ``repeat`` times and return the result object (rates in
    messages/second; with ``repeat`` > 1 the medians, and each run under ``runs``)."""
    # Django (and so the services) only in the parent: consumer processes import this module
    # with nothing but psycopg and the engine.
    from queues import services

    if repeat < 1:
        raise BenchError("--repeat must be 1 or more.")
    if history < 0:
        raise BenchError("--history must not be negative.")
    if history and repeat < 2:
        raise BenchError(
            "--history needs --repeat 2 or more: run 1 measures the fresh queues, the history "
            "is loaded after it, and runs 2 and later measure the queues that hold it."
        )
    settle = (SETTLE_S if history else 0.0) if settle is None else settle
    if settle < 0:
        raise BenchError("--settle must not be negative.")
    conninfo = services.conninfo()
    suite = Suite(
        conninfo=conninfo,
        prefix=f"BENCH_{secrets.token_hex(4).upper()}",
        sizes=sizes_for(scale),
        baseline=baseline,
        peers=peers,
        buffered=buffered_supported(),
        rounds=rounds,
    )
    if rounds < 1:
        raise BenchError("--rounds must be 1 or more.")
    out: dict[str, Any] = {
        "suite": "queues",
        "scale": scale,
        "prefix": suite.prefix,
        "protocol": f"interleaved, {rounds} rounds" if rounds > 1 else "sequential",
    }
    with psycopg.connect(conninfo) as conn:
        out.update(server_settings(conn))
    out["server"] = {name: out[f"pg_{name}"] for name in SERVER_SHOW}
    out["server"]["version"] = out["postgres_version"]
    if peers:
        out.update(check_installed(conninfo))
        out["pgmq_workloads"] = PGMQ_WORKLOADS
        out["pgq_workloads"] = PGQ_WORKLOADS
    log(
        f"queues benchmark under {suite.prefix} (scale {scale}, PostgreSQL "
        f"{out['postgres_version']}, "
        + ", ".join(f"{k}={v}" for k, v in out["server"].items() if k != "version")
        + ")"
    )
    if not suite.buffered:
        log(
            "buffered messages are not built yet (engine.enqueue/dequeue take no delivery_mode): "
            f"{', '.join(BUFFERED_KEYS)} are left out"
        )

    qt = services.queue_table_create(
        user=None,
        name=f"{suite.prefix}_QT",
        sort_order="enq_time",
        comment="benchmark; dropped when the run ends",
    )
    runs: list[dict[str, Any]] = []
    try:
        roles = ["single", "batch", "concurrent"] + (["buffered"] if suite.buffered else [])
        for role in roles:
            suite.queues[role] = services.queue_create(
                user=None, name=f"{suite.prefix}_{role.upper()}", queue_table=qt
            )
        for k in range(1, repeat + 1):
            if k == 2 and history:
                out["history"] = load_history(suite, int(history * 1_000_000), log)
            if k >= 2 and settle:
                out.setdefault("settle", []).append(monitor_settle(settle, log))
            log(f"run {k} of {repeat}:" if repeat > 1 else "run:")
            runs.append(run_once(suite, k, log))
    finally:
        _drop(services, qt)

    out.update(combine(runs))
    if repeat > 1:
        out["runs"] = runs
        out["spread"] = spread(runs)
    out["targets"] = targets.check(out, runs)
    log("targets of issue 13 (reported, not enforced):")
    for line in targets.report_lines(out["targets"]):
        log(line)
    return out


def run_once(suite: Suite, k: int, log: Log) -> dict[str, Any]:
    """Every workload once on the suite's (empty) queues; the one-at-a-time and batch workloads
    interleave the sides in ``suite.rounds`` chunks (workload.interleaved)."""
    sizes, out = suite.sizes, {}
    prefix = f"{suite.prefix}_R{k}"

    def rec(key: str, timing: Timing) -> None:
        record(out, key, timing, log)

    # Every side's tables and queues go at the end, each even if another's cleanup fails.
    with ExitStack() as cleanup:
        plain: PlainTables | None = None
        pgmq: Pgmq | None = None
        pgq: Pgq | None = None
        if suite.baseline:
            plain = PlainTables(suite.conninfo, prefix)
            cleanup.callback(plain.drop)
        if suite.peers:
            pgmq = Pgmq(suite.conninfo, prefix)
            cleanup.callback(pgmq.close)
            pgq = Pgq(suite.conninfo, prefix)
            cleanup.callback(pgq.close)
        # One message per committed transaction: every side in autocommit, where one call is one
        # statement and one transaction (one round trip, as PGMQ's calls always were), rather
        # than BEGIN, the statement and COMMIT. So is a batch of 100 enqueued (one statement on
        # a single-consumer queue, as PGMQ's send_batch and the plain table's COPY are); a
        # batch dequeued keeps a transaction (PGMQ's takes two statements, read and delete).
        with (
            psycopg.connect(suite.conninfo) as conn,
            psycopg.connect(suite.conninfo, autocommit=True) as auto,
        ):

            def compare(key: str, *sides: tuple[str, Any], step: int = 1) -> None:
                """The engine's workload ``key`` and each present peer's, interleaved."""
                present = [(name, fn) for name, fn in sides if fn]
                timings = interleaved(present, sizes[key], rounds=suite.rounds, step=step)
                for name, timing in timings.items():
                    rec(name, timing)

            info = suite.info(conn, "single")
            compare(
                "enqueue_single_per_txn",
                ("enqueue_single_per_txn", lambda k: enqueue_single(auto, info, k)),
                ("pgmq_enqueue_single_per_txn", pgmq and pgmq.enqueue_single),
                ("pgq_enqueue_single_per_txn", pgq and pgq.enqueue_single),
                ("baseline_insert_single_per_txn", plain and (lambda k: plain.insert_single(k))),
            )
            compare(
                "dequeue_single",
                ("dequeue_single", lambda k: dequeue_single(auto, info, k)),
                ("pgmq_dequeue_single", pgmq and pgmq.dequeue_single),
                ("baseline_delete_single", plain and (lambda k: plain.delete_single(k))),
            )

            info = suite.info(conn, "batch")
            compare(
                "enqueue_batch100",
                ("enqueue_batch100", lambda k: enqueue_batches(auto, info, k)),
                ("pgmq_enqueue_batch100", pgmq and pgmq.enqueue_batches),
                ("pgq_enqueue_batch100", pgq and pgq.enqueue_batches),
                ("baseline_copy_batch100", plain and plain.copy_batches),
                step=BATCH,
            )
            compare(
                "dequeue_batch100",
                ("dequeue_batch100", lambda k: dequeue_batches(conn, info, k)),
                ("pgmq_dequeue_batch100", pgmq and pgmq.dequeue_batches),
                ("baseline_delete_batch100", plain and plain.delete_batches),
                step=BATCH,
            )
            if pgq:
                # PgQ reads the whole batch queue its way (no deletes); no ratio, see peers.py.
                rec("pgq_dequeue_batch_read", pgq.read_batches(sizes["enqueue_batch100"]))
            out["dequeue_batch100_drained_after"] = drain(conn, info)

            out.update(engine_concurrent(suite, conn, log))
            n = sizes["dequeue_4_consumers"]
            if pgmq:
                rec("pgmq_dequeue_4_consumers", pgmq.dequeue_concurrent(n).timing)
            if plain:
                rec("baseline_delete_4_consumers", plain.delete_concurrent(n).timing)

            if suite.buffered:
                info = suite.info(conn, "buffered")
                n = sizes["enqueue_single_buffered"]
                rec("enqueue_single_buffered", enqueue_single(auto, info, n, buffered=True))
                if plain:
                    rec(
                        "baseline_unlogged_insert_single_per_txn",
                        plain.insert_single(n, unlogged=True),
                    )
                n = sizes["dequeue_single_buffered"]
                rec("dequeue_single_buffered", dequeue_single(auto, info, n, buffered=True))
                if plain:
                    rec("baseline_unlogged_delete_single", plain.delete_single(n, unlogged=True))
                if drain(conn, info, buffered=True):
                    raise BenchError("The buffered queue held more messages than were enqueued.")
            elif plain:
                # The limit is a fact of the server, measured whether or not the engine has it.
                n = sizes["enqueue_single_buffered"]
                rec(
                    "baseline_unlogged_insert_single_per_txn", plain.insert_single(n, unlogged=True)
                )
                rec("baseline_unlogged_delete_single", plain.delete_single(n, unlogged=True))
    add_ratios(out)
    return out


def engine_concurrent(suite: Suite, conn: psycopg.Connection, log: Log) -> dict[str, Any]:
    """``dequeue_4_consumers``: exactly the workload's messages loaded untimed, so "queue empty"
    ends the consumers; the counts are printed and judged by the command."""
    from queues import selectors

    out: dict[str, Any] = {}
    queue = suite.queues["concurrent"]
    info = suite.info(conn, "concurrent")
    n = suite.sizes["dequeue_4_consumers"]
    for start in range(0, n, BATCH):
        engine.enqueue(conn, info, [_message() for _ in range(min(BATCH, n - start))])
        conn.commit()
    if selectors.message_list(queue=queue).count() != n:
        raise BenchError("The queue does not hold exactly the messages just loaded.")
    try:
        out["dequeue_plan"] = dequeue_plan(conn, info)
    except (AttributeError, TypeError, psycopg.Error) as exc:
        log(f"  (no dequeue_plan: this engine's claim is not the one-table one: {exc})")
    out.update(table_facts(conn))

    run4 = run_consumers(engine_consumer, suite.conninfo, queue.pk, n)
    record(out, "dequeue_4_consumers", run4.timing, log)
    out["dequeue_4_consumers_total"] = run4.distinct
    out["dequeue_4_consumers_duplicates"] = run4.duplicates
    if hasattr(engine, "STAT_SHARDS"):
        # Which counter shard each consumer's backend wrote (two sharing one wait on each other).
        out["dequeue_4_consumers_stat_shards"] = sorted(
            pid % engine.STAT_SHARDS for pid in run4.backend_pids
        )
    out["dequeue_4_consumers_left"] = selectors.message_list(queue=queue).count()
    out["dequeue_4_consumers_mode"] = f"{CONSUMERS} processes, one connection each"
    log(
        f"  {'':<40} total {run4.distinct}, duplicates {run4.duplicates}, "
        f"left {out['dequeue_4_consumers_left']}"
    )
    return out


# --- repeats and history -------------------------------------------------------------------------


def load_history(suite: Suite, total: int, log: Log) -> dict[str, Any]:
    """Put ``total`` messages through the suite's queues, enqueued and consumed in batches of
    :data:`HISTORY_BATCH` with the engine (untimed for the figures), so the queues are empty and
    their storage holds what millions of consumed messages leave behind."""
    roles = list(suite.queues)
    log(f"history: {total:,} messages through {', '.join(roles)}, enqueued and consumed")
    start = time.perf_counter()
    done = 0
    with psycopg.connect(suite.conninfo) as conn:
        for i, role in enumerate(roles):
            buffered = role == "buffered"
            mode = _delivery(buffered)
            info = suite.info(conn, role)
            share = total // len(roles) + (1 if i < total % len(roles) else 0)
            for first in range(0, share, HISTORY_BATCH):
                size = min(HISTORY_BATCH, share - first)
                engine.enqueue(conn, info, [_message() for _ in range(size)], **mode)
                conn.commit()
                got = engine.dequeue(conn, info, mode=engine.REMOVE, batch=size, **mode)
                conn.commit()
                if len(got) != size:
                    raise BenchError(f"History: a dequeue of {size} returned {len(got)}.")
                done += size
                if done % (100 * HISTORY_BATCH) == 0:
                    log(f"  history {done:,} of {total:,} ({time.perf_counter() - start:.0f} s)")
    seconds = round(time.perf_counter() - start, 1)
    log(f"  history {done:,} messages in {seconds} s")
    return {"messages": done, "seconds": seconds, "loaded_before_run": 2}


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
