"""The ``propagation`` suite of bench/WORKLOADS.md: queue-to-queue propagation run by a real Celery
worker, as in production.

The suite starts what it needs itself and stops it afterwards:

- a Celery worker subprocess (``celery -A console worker -P threads -c 4``) on the configured
  broker and database, consuming only a Celery queue named after this run, so a worker of another
  database on the same broker never takes the runs (nor this one theirs);
- the beat's part: a thread calls ``jobs.services.propagation_dispatch`` every
  ``AQ_DISPATCH_INTERVAL_S`` and sends each new run to that queue.

The topology is created with the services under a random ``BENCH_<hex>`` prefix and dropped at the
end, even when a workload fails: a multi-consumer source, two single-consumer destinations, one
positive rule set ``:msg.priority = 1`` (the shared 241-byte payload with ``priority`` 1 or 2 in
turn, so it passes exactly half), and two propagations source→D1 and source→D2.

``celery_window``: N source messages are loaded (not timed) while the propagations have no
schedule, then both are scheduled at once. The clock runs from the first run's ``started_at`` to
the last commit at a destination, which a separate connection timestamps from the NOTIFY the
enqueue sends at commit (``enq_time`` is ``now()``, the transaction's start, so it is earlier than
the commit by a batch's duration). Every batch of two or more source messages holds a passing one,
so the last batch to commit always notifies.

``latency_p50_ms`` / ``latency_p99_ms``: a third propagation (own source and destination, no rule
set, the default schedule: latency 3 s) is left idle, then single messages are enqueued at 5 per
second. Each one's latency runs from the moment the enqueue's COMMIT returned to the moment a
LISTEN connection on the destination's channel received the commit's notification.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import psycopg

from console.bench.queues import PAYLOAD, BenchError, server_settings
from queues import engine

Log = Callable[[str], None]

FULL_SIZES: dict[str, int] = {"celery_window": 100_000, "latency": 200}
LOAD_BATCH = 100
LATENCY_RATE = 5.0  # messages per second
LATENCY_DEFAULT_S = 3.0  # the schedule's default latency (WORKLOADS.md: "the default latency")
TARGETS = {"celery_window": 8_000, "latency_p50_ms": 200, "latency_p99_ms": 1_000}
# Seconds the worker may take to start and claim the first run.
START_TIMEOUT_S = 90.0
WORKER_CONCURRENCY = 4


def sizes_for(scale: float) -> dict[str, int]:
    """The workload sizes at ``scale`` (1.0 = WORKLOADS.md). The window stays even, so the rule
    passes exactly half of it."""
    window = max(2, round(FULL_SIZES["celery_window"] * scale / 2) * 2)
    latency = max(5, round(FULL_SIZES["latency"] * scale))
    return {"celery_window": window, "latency": latency}


def payload(i: int) -> dict[str, Any]:
    """The shared payload with ``priority`` 1 for even ``i`` and 2 for odd: same 241 bytes."""
    return {**PAYLOAD, "priority": 1 + i % 2}


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p from 0 to 100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


# --- the moving parts: worker, dispatcher, commit clocks -----------------------------------------


def database_url() -> str:
    """DATABASE_URL of the database this process uses (under pytest: the test database, which
    the environment's DATABASE_URL does not name)."""
    from django.db import connection

    s = connection.settings_dict
    host = s.get("HOST") or "127.0.0.1"
    if host.startswith("/"):
        host = quote(host, safe="")
    auth = quote(s.get("USER") or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{quote(s['NAME'], safe='')}"


class WorkerProcess:
    """A real ``celery worker`` subprocess with a threads pool, on this process's database and
    broker, consuming ``queue`` only."""

    def __init__(self, queue: str, node: str):
        from django.conf import settings

        self.queue = queue
        self.hostname = f"{node}@{socket.gethostname()}"
        self.log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop())
            prefix="aqbench-worker-", suffix=".log", delete=False
        )
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "console.settings"),
        }
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "console",
                "worker",
                "-Q",
                queue,
                "-P",
                "threads",
                "-c",
                str(WORKER_CONCURRENCY),
                "-n",
                self.hostname,
                "--loglevel",
                "WARNING",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=str(settings.BASE_DIR),
            env=env,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
        )

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise BenchError(
                f"The Celery worker exited with {self.proc.returncode}: {self.log_tail()}"
            )

    def log_tail(self, chars: int = 2_000) -> str:
        try:
            with open(self.log_file.name, encoding="utf-8", errors="replace") as fh:
                return fh.read()[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30.0) -> None:
        """Warm shutdown (SIGTERM lets running tasks finish), then SIGKILL if it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log_file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.log_file.name)


def forget_broker_queue(name: str) -> None:
    """Remove the run's Celery queue (and its exchange binding) from the broker, so repeated
    runs leave no keys behind. Declaring first tells kombu which bindings to delete."""
    from kombu import Exchange, Queue

    from console.celery import app

    with app.connection_for_write() as conn:
        queue = Queue(name, Exchange(name), routing_key=name)(conn.default_channel)
        queue.declare()
        queue.delete()


class Dispatcher(threading.Thread):
    """The beat's dispatch: open due windows and send each new run to the worker's queue."""

    def __init__(self, queue: str, interval: float):
        super().__init__(name="aqbench-dispatch", daemon=True)
        self.queue = queue
        self.interval = interval
        self.stopping = threading.Event()
        self.sent: list[int] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from django.db import connection

        from jobs.services import propagation_dispatch
        from jobs.tasks import propagation_run

        try:
            while not self.stopping.is_set():
                for run_id in propagation_dispatch(send=False):
                    propagation_run.apply_async((run_id,), queue=self.queue)
                    self.sent.append(run_id)
                self.stopping.wait(self.interval)
        except BaseException as exc:  # reported by the suite, which then stops
            self.error = exc
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)


class CommitClock(threading.Thread):
    """Timestamps every commit notification on ``channels`` (an autocommit LISTEN connection)."""

    def __init__(self, conninfo: str, channels: list[str]):
        super().__init__(name="aqbench-commit-clock", daemon=True)
        self.conn = psycopg.connect(conninfo, autocommit=True)
        for ch in channels:
            self.conn.execute(f'LISTEN "{ch}"')
        self.stopping = threading.Event()
        self.times: list[float] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            for _ in self.conn.notifies(timeout=0.2):
                self.times.append(time.time())

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)
        self.conn.close()


class ArrivalClock(threading.Thread):
    """Timestamps each destination commit and attributes its messages to their source messages.

    On a notification it reads the destination's new rows with their inserting transaction
    (``xmin``) and takes only the oldest transaction's rows: a later commit seen by the same read
    has a notification of its own, which claims its rows with its own time."""

    def __init__(self, conninfo: str, queue_id: int):
        super().__init__(name="aqbench-arrivals", daemon=True)
        self.listen = psycopg.connect(conninfo, autocommit=True)
        self.listen.execute(f'LISTEN "{engine.channel_name(queue_id)}"')
        self.read = psycopg.connect(conninfo, autocommit=True)
        self.queue_id = queue_id
        self.stopping = threading.Event()
        self.arrived: dict[int, float] = {}  # source message id -> commit notification time
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                for _ in self.listen.notifies(timeout=0.2):
                    t = time.time()
                    rows = self.read.execute(
                        "SELECT xmin::text::bigint, (headers->>'aq$_source_msgid')::bigint "
                        "FROM aq_message WHERE queue_id = %s",
                        (self.queue_id,),
                    ).fetchall()
                    fresh = [(x, src) for x, src in rows if src not in self.arrived]
                    if fresh:
                        first = min(x for x, _ in fresh)
                        for x, src in fresh:
                            if x == first:
                                self.arrived[src] = t
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)
        self.listen.close()
        self.read.close()


class SessionSampler(threading.Thread):
    """Samples what the runs' PostgreSQL sessions are doing every ``interval`` seconds
    (``pg_stat_activity``): on the CPU, waiting for the worker (``Client:ClientRead``, i.e. the
    Python side of a batch), for a row lock the other propagation holds (``Lock:transactionid``),
    for the WAL flush of a commit (``IO:WALSync``/``LWLock:WALWrite``), and so on. The shares are
    the server-side profile of the window."""

    def __init__(self, conninfo: str, propagation_ids: list[int], interval: float = 0.05):
        super().__init__(name="aqbench-sessions", daemon=True)
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.ids = propagation_ids
        self.interval = interval
        self.stopping = threading.Event()
        self.counts: dict[str, int] = {}
        self.samples = 0

    def run(self) -> None:
        pids: list[int] = []
        refreshed = 0.0
        while not self.stopping.is_set():
            now = time.monotonic()
            if now - refreshed > 0.5:
                pids = [
                    r[0]
                    for r in self.conn.execute(
                        "SELECT session_id FROM jobs_propagationrun WHERE propagation_id = "
                        "ANY(%s) AND state = 'RUNNING' AND session_id IS NOT NULL",
                        (self.ids,),
                    ).fetchall()
                ]
                refreshed = now
            if pids:
                for state, wtype, wevent in self.conn.execute(
                    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
                    "WHERE pid = ANY(%s)",
                    (pids,),
                ).fetchall():
                    if state == "active" and wevent is None:
                        key = "CPU"
                    elif wevent is None:
                        key = state or "unknown"
                    else:
                        key = f"{wtype}:{wevent}"
                    self.counts[key] = self.counts.get(key, 0) + 1
                    self.samples += 1
            self.stopping.wait(self.interval)

    def shares(self) -> dict[str, float]:
        total = self.samples or 1
        ordered = sorted(self.counts.items(), key=lambda kv: -kv[1])
        return {k: round(v / total, 3) for k, v in ordered}

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)
        self.conn.close()


def _deadlocks(conninfo: str) -> int:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


# --- topology ------------------------------------------------------------------------------------


@dataclass
class Topology:
    prefix: str
    tables: list[Any] = field(default_factory=list)
    propagations: list[Any] = field(default_factory=list)
    rule_sets: list[Any] = field(default_factory=list)
    rules: list[Any] = field(default_factory=list)


def _propagation(name: str, source: Any, destination: Any, rule_set: Any, schedule: bool) -> Any:
    from jobs import services as js

    return js.propagation_create(
        user=None,
        name=name,
        source_queue=source,
        destination_queue=destination,
        positive_rule_set=rule_set,
        comment="benchmark; dropped when the run ends",
        schedule=schedule,
    )


def _drop(topo: Topology, worker_hostname: str) -> None:
    """Purge first (the worker is stopped, so nothing holds a row), then drop propagations (their
    subscribers), rule sets, rules, queues and queue tables, and the worker's heartbeat row."""
    from console.bench.queues import _drop as drop_queue_table
    from jobs import services as js
    from jobs.models import Worker
    from queues import services as qs
    from rules import services as rs

    for qt in topo.tables:
        for q in qt.queues.all():
            qs.queue_purge(user=None, queue=q, condition=engine.PurgeCondition())
    for p in topo.propagations:
        js.propagation_delete(user=None, propagation=p)
    for s in topo.rule_sets:
        rs.rule_set_delete(user=None, rule_set=s)
    for r in topo.rules:
        rs.rule_delete(user=None, rule=r)
    for qt in topo.tables:
        drop_queue_table(qs, qt)
    Worker.objects.filter(hostname=worker_hostname).delete()


# --- helpers -------------------------------------------------------------------------------------


def _wait(
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    check: Callable[[], None],
    every: float = 0.05,
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        check()
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise BenchError(f"Timed out after {timeout:.0f} s waiting for {what}.")


def _failed_run(propagation_ids: list[int]) -> str | None:
    from jobs.models import PropagationRun

    run = (
        PropagationRun.objects.filter(propagation_id__in=propagation_ids, state="FAILED")
        .only("error")
        .first()
    )
    return run.error if run is not None else None


def _run_totals(propagation_id: int) -> dict[str, Any]:
    from django.db.models import Count, Max, Min, Sum

    from jobs.models import PropagationRun

    return PropagationRun.objects.filter(propagation_id=propagation_id).aggregate(
        runs=Count("id"),
        messages=Sum("messages"),
        propagated=Sum("propagated"),
        discarded=Sum("discarded"),
        exceptions=Sum("exceptions"),
        batches=Sum("batches"),
        dequeue_time=Sum("dequeue_time"),
        rule_time=Sum("rule_time"),
        enqueue_time=Sum("enqueue_time"),
        started=Min("started_at"),
        last_beat=Max("heartbeat_at"),
    )


def _load(conninfo: str, queue_id: int, n: int) -> None:
    with psycopg.connect(conninfo) as conn:
        info = engine.queue_info(conn, queue_id)
        for start in range(0, n, LOAD_BATCH):
            batch = [
                engine.NewMessage(payload=payload(i))
                for i in range(start, min(start + LOAD_BATCH, n))
            ]
            engine.enqueue(conn, info, batch, user="BENCH")
            conn.commit()
        got = conn.execute(
            "SELECT count(*) FROM aq_message WHERE queue_id = %s AND state = 'READY'", (queue_id,)
        ).fetchone()
        conn.commit()
    if not got or got[0] != n:
        raise BenchError(f"The source holds {got and got[0]} messages after loading {n}.")


def _destination_facts(conninfo: str, queue_id: int) -> tuple[int, int, int]:
    """(messages, distinct source messages, messages failing the rule) at a destination."""
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT headers->>'aq$_source_msgid'), "
            "count(*) FILTER (WHERE (payload->>'priority')::int <> 1) "
            "FROM aq_message WHERE queue_id = %s",
            (queue_id,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


# --- the workloads -------------------------------------------------------------------------------


def celery_window(
    conninfo: str,
    source: Any,
    destinations: list[Any],
    propagations: list[Any],
    n: int,
    worker: WorkerProcess,
    dispatcher: Dispatcher,
    log: Log,
) -> dict[str, Any]:
    from jobs import services as js

    _load(conninfo, source.pk, n)
    log(f"  loaded {n} messages into {source.name} (not timed); scheduling both propagations")
    clock = CommitClock(conninfo, [engine.channel_name(d.pk) for d in destinations])
    clock.start()
    ids = [p.pk for p in propagations]
    sampler = SessionSampler(conninfo, ids)
    sampler.start()
    deadlocks = _deadlocks(conninfo)

    def check() -> None:
        worker.check()
        if dispatcher.error is not None:
            raise BenchError(f"The dispatcher failed: {dispatcher.error}")
        error = _failed_run(ids)
        if error:
            raise BenchError(f"A propagation run failed: {error}")

    try:
        for p in propagations:
            js.schedule_create(user=None, propagation=p)
        totals: dict[int, dict[str, Any]] = {}

        def done() -> bool:
            for pid in ids:
                totals[pid] = _run_totals(pid)
            return all((totals[pid]["messages"] or 0) >= n for pid in ids)

        # Polled gently (the clock is the commit notifications, not this loop): on two cores the
        # benchmark's own queries would otherwise take CPU from the worker it measures.
        _wait(
            done,
            START_TIMEOUT_S + n / 200,
            f"both propagations to take {n} messages",
            check,
            every=0.25,
        )
        # The last commit's notification reaches the clock's connection at once; give it a beat.
        time.sleep(0.3)
    finally:
        clock.stop()
        sampler.stop()
    if not clock.times:
        raise BenchError("No destination commit was seen.")
    started = min(t["started"] for t in totals.values()).timestamp()
    seconds = max(clock.times) - started
    out: dict[str, Any] = {
        "celery_window": round(n / seconds, 1),
        "celery_window_s": round(seconds, 3),
        "celery_window_n": n,
        "celery_window_runs": sum(t["runs"] for t in totals.values()),
        "celery_window_batches": sum(t["batches"] or 0 for t in totals.values()),
        "celery_window_commits_seen": len(clock.times),
        # The runs' own split of their time (summed over both propagations, in seconds).
        "celery_window_dequeue_s": round(sum(t["dequeue_time"] for t in totals.values()), 3),
        "celery_window_rule_s": round(sum(t["rule_time"] for t in totals.values()), 3),
        "celery_window_enqueue_s": round(sum(t["enqueue_time"] for t in totals.values()), 3),
        # Deadlocks PostgreSQL broke in this database during the window (the runner retries
        # them), and where the runs' sessions spent their time.
        "celery_window_deadlocks": _deadlocks(conninfo) - deadlocks,
        "celery_window_sessions": sampler.shares(),
    }
    for i, d in enumerate(destinations, start=1):
        count, distinct, wrong = _destination_facts(conninfo, d.pk)
        out[f"celery_window_delivered_d{i}"] = count
        if count != n // 2 or distinct != count or wrong:
            raise BenchError(
                f"{d.name} holds {count} messages ({distinct} distinct sources, {wrong} the rule "
                f"refuses); expected {n // 2}: a message was lost, duplicated or misrouted."
            )
    for pid in ids:
        t = totals[pid]
        if t["propagated"] != n // 2 or t["discarded"] != n // 2 or t["exceptions"]:
            raise BenchError(f"A propagation's counters are wrong: {t}.")
    return out


def latency(
    conninfo: str,
    source: Any,
    destination: Any,
    propagation: Any,
    n: int,
    worker: WorkerProcess,
    dispatcher: Dispatcher,
    log: Log,
) -> dict[str, Any]:
    from jobs.models import PropagationRun

    def check() -> None:
        worker.check()
        if dispatcher.error is not None:
            raise BenchError(f"The dispatcher failed: {dispatcher.error}")
        error = _failed_run([propagation.pk])
        if error:
            raise BenchError(f"The latency propagation's run failed: {error}")

    _wait(
        lambda: PropagationRun.objects.filter(
            propagation=propagation, state="RUNNING", waiting=True
        ).exists(),
        START_TIMEOUT_S,
        "the latency propagation to be running and idle",
        check,
    )
    log(f"  the latency propagation is idle; enqueueing {n} messages at {LATENCY_RATE:g}/s")
    arrivals = ArrivalClock(conninfo, destination.pk)
    arrivals.start()
    sent: dict[int, float] = {}
    try:
        with psycopg.connect(conninfo) as conn:
            info = engine.queue_info(conn, source.pk)
            conn.commit()
            begin = time.monotonic()
            for i in range(n):
                pause = begin + i / LATENCY_RATE - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                (mid,) = engine.enqueue(conn, info, [engine.NewMessage(payload=PAYLOAD)])
                conn.commit()
                sent[mid] = time.time()
                check()
        _wait(
            lambda: len(arrivals.arrived) >= n or arrivals.error,
            30.0,
            "every latency message at the destination",
            check,
        )
    finally:
        arrivals.stop()
    if arrivals.error is not None:
        raise BenchError(f"The arrival clock failed: {arrivals.error}")
    missing = set(sent) - set(arrivals.arrived)
    if missing:
        raise BenchError(f"{len(missing)} latency messages never reached the destination.")
    ms = [(arrivals.arrived[mid] - t0) * 1000 for mid, t0 in sent.items()]
    return {
        "latency_p50_ms": round(percentile(ms, 50), 1),
        "latency_p99_ms": round(percentile(ms, 99), 1),
        "latency_max_ms": round(max(ms), 1),
        "latency_min_ms": round(min(ms), 1),
        "latency_mean_ms": round(sum(ms) / len(ms), 1),
        "latency_n": n,
        "latency_schedule_latency_s": LATENCY_DEFAULT_S,
        "latency_runs": PropagationRun.objects.filter(propagation=propagation).count(),
    }


# --- the suite -----------------------------------------------------------------------------------


def run(*, scale: float = 1.0, baseline: bool = False, log: Log = print) -> dict[str, Any]:
    """Run ``celery_window`` and the latency workload; return the result object."""
    from django.conf import settings

    from jobs import services as js
    from jobs.models import PropagationRun, PropagationSchedule
    from queues import services as qs
    from rules import services as rs

    sizes = sizes_for(scale)
    conninfo = qs.conninfo()
    prefix = f"BENCH_{secrets.token_hex(4).upper()}"
    out: dict[str, Any] = {"suite": "propagation", "scale": scale, "prefix": prefix}
    with psycopg.connect(conninfo) as conn:
        out.update(server_settings(conn))
    out.update(
        broker=settings.CELERY_BROKER_URL.split("://", 1)[0],
        worker=f"1 process, -P threads -c {WORKER_CONCURRENCY}",
        propagation_batch=settings.AQ_PROPAGATION["BATCH"],
    )
    if js.maintenance_get().restricted:
        raise BenchError("Maintenance mode is on: no propagation run would start. Turn it off.")
    log(
        f"propagation benchmark under {prefix} (scale {scale}, broker {out['broker']}, "
        f"PostgreSQL {out['postgres_version']}, autovacuum={out['pg_autovacuum']})"
    )

    topo = Topology(prefix)
    celery_queue = f"aqbench_{prefix.lower()}"
    worker: WorkerProcess | None = None
    dispatcher: Dispatcher | None = None
    hostname = f"{prefix.lower()}@{socket.gethostname()}"
    try:
        mc = qs.queue_table_create(
            user=None,
            name=f"{prefix}_MC",
            sort_order="enq_time",
            multiple_consumers=True,
            comment="benchmark; dropped when the run ends",
        )
        topo.tables.append(mc)
        sc = qs.queue_table_create(
            user=None,
            name=f"{prefix}_SC",
            sort_order="enq_time",
            comment="benchmark; dropped when the run ends",
        )
        topo.tables.append(sc)
        src = qs.queue_create(user=None, name=f"{prefix}_SRC", queue_table=mc)
        d1 = qs.queue_create(user=None, name=f"{prefix}_D1", queue_table=sc)
        d2 = qs.queue_create(user=None, name=f"{prefix}_D2", queue_table=sc)
        rule = rs.rule_create(user=None, name=f"{prefix}_HALF", condition=":msg.priority = 1")
        topo.rules.append(rule)
        half = rs.rule_set_create(user=None, name=f"{prefix}_HALF_RS")
        topo.rule_sets.append(half)
        rs.rule_set_add_rule(user=None, rule_set=half, rule=rule)
        # No schedule yet: the messages are loaded before the clock can start.
        window_props = [
            _propagation(f"{prefix}_P{i}", src, d, half, schedule=False)
            for i, d in enumerate((d1, d2), start=1)
        ]
        topo.propagations.extend(window_props)

        worker = WorkerProcess(celery_queue, prefix.lower())
        hostname = worker.hostname
        dispatcher = Dispatcher(celery_queue, settings.AQ_DISPATCH_INTERVAL_S)
        dispatcher.start()

        out.update(
            celery_window(
                conninfo,
                src,
                [d1, d2],
                window_props,
                sizes["celery_window"],
                worker,
                dispatcher,
                log,
            )
        )
        log(
            f"  celery_window   {out['celery_window']:>10}/s ({out['celery_window_n']} in "
            f"{out['celery_window_s']} s, {out['celery_window_runs']} runs, "
            f"{out['celery_window_batches']} batches)"
        )
        for p in window_props:
            js.schedule_disable(user=None, propagation=p)

        lsrc = qs.queue_create(user=None, name=f"{prefix}_LSRC", queue_table=mc)
        ldst = qs.queue_create(user=None, name=f"{prefix}_LDST", queue_table=sc)
        lprop = _propagation(f"{prefix}_PL", lsrc, ldst, None, schedule=True)
        topo.propagations.append(lprop)
        out.update(latency(conninfo, lsrc, ldst, lprop, sizes["latency"], worker, dispatcher, log))
        log(
            f"  latency         p50 {out['latency_p50_ms']} ms, p99 {out['latency_p99_ms']} ms, "
            f"max {out['latency_max_ms']} ms ({out['latency_n']} messages)"
        )
        js.schedule_disable(user=None, propagation=lprop)
        out["targets"] = TARGETS
        out["pending"] = {"spark_bulk": "issue 5 (Spark bulk propagation) builds it"}
    finally:
        if dispatcher is not None:
            dispatcher.stop()
        if worker is not None:
            ids = [p.pk for p in topo.propagations]
            # Disabled schedules end their runs at the next heartbeat; a clean end beats a kill.
            PropagationSchedule.objects.filter(propagation_id__in=ids).update(enabled=False)
            deadline = time.monotonic() + 2 * settings.AQ_PROPAGATION["HEARTBEAT_S"] + 5
            while (
                time.monotonic() < deadline
                and worker.proc.poll() is None
                and PropagationRun.objects.filter(
                    propagation_id__in=ids, state__in=("QUEUED", "RUNNING")
                ).exists()
            ):
                time.sleep(0.1)
            worker.stop()
            forget_broker_queue(celery_queue)
        _drop(topo, hostname)
    return out
