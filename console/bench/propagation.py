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

``remote_window`` / ``remote_latency_p50_ms`` / ``remote_latency_p99_ms`` (issue 14): the two
workloads above with a destination at another site. A second database on the same PostgreSQL
server (``<database>_<prefix>``) is created, migrated by ``manage.py migrate`` with its own
AQ_GLOBAL_NAME (``<prefix>.REMOTE``), given two single-consumer queues by this project's services
(a ``manage.py shell`` against it), and linked (``<prefix>_SITE``, the bench's own role); none of
that is timed. ``remote_window``: ``celery_window`` exactly, from a source of its own, with D1
here and D2 at the site (``D2@LINK``); the commit clocks LISTEN in both databases and the checks
count D2 there. ``remote_latency``: the latency workload to a queue there. The link and the
database are dropped at the end.

``sql_limit``: what PostgreSQL alone takes for the rows of ``spark_bulk``. After the two
workloads above, the propagations are unscheduled (no schedule at all, so no window can race the
bulk work) and the source and destinations are emptied; N source messages are loaded (engine
enqueue, larger batches, not timed) and the message tables vacuumed (no ANALYZE, see
``_vacuum``). Then ONE ``INSERT … SELECT`` copies the source messages with
``payload->>'priority' = '1'`` into D1 and D2 (``CROSS JOIN`` of the two destinations: N inserted
rows), with the columns of the engine's copies (``queues.engine.transfer``), in one transaction
timed as statement + COMMIT. Its rows are deleted again (not timed) and the tables vacuumed
before ``spark_bulk`` runs on the same source.

``spark_bulk``: ONE Spark bulk job (``jobs.services.spark_job_submit``) naming P1 and P2, mode
MOVE, master ``local[*]``. Its Celery task goes to the suite's worker (the bench process sends it
to the run's Celery queue), which spark-submits the application and follows it. The clock runs
from the ``spark_job_submit`` call to the row's ``finished_at`` as it turns SUCCEEDED. The suite
fails unless D1 and D2 each hold exactly N/2 copies of distinct source messages, none the rule
refuses, the job's parts count N read, N/2 discarded, N/2 per destination and nothing else, and
no copy of the propagations' subscribers is left at the source. The worker gets a var directory of
its own (``AQ_VAR_DIR``): the job's spec and driver log live under ``var/spark/job-<id>``, and a
job of another database with the same id must not share it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from console.bench.queues import PAYLOAD, BenchError, server_settings
from queues import engine

Log = Callable[[str], None]

FULL_SIZES: dict[str, int] = {"celery_window": 100_000, "latency": 200, "spark_bulk": 1_000_000}
LOAD_BATCH = 100
# The bulk source is loaded in bigger transactions (still the engine's enqueue; not timed).
BULK_LOAD_BATCH = 2_000
LATENCY_RATE = 5.0  # messages per second
LATENCY_DEFAULT_S = 3.0  # the schedule's default latency (WORKLOADS.md: "the default latency")
SPARK_MASTER = "local[*]"
# Absolute targets, and (``_vs_`` keys) the ratios the Spark targets set: spark_bulk at least
# 2x celery_window, spark_bulk_s at most 2x sql_limit_s. The result's ``targets`` also carries
# them resolved against this run's figures, as ``spark_bulk`` and ``spark_bulk_s``.
TARGETS: dict[str, float] = {
    "celery_window": 8_000,
    "latency_p50_ms": 200,
    "latency_p99_ms": 1_000,
    "spark_bulk_vs_celery_window": 2.0,  # at least
    "spark_bulk_vs_sql_limit_s": 2.0,  # at most
    # Issue 14: one destination at a remote site on the same machine.
    "remote_window_vs_celery_window": 0.7,  # at least
    "remote_latency_p50_ms": 200,
    "remote_latency_p99_ms": 1_000,
}
# Seconds the worker may take to start and claim the first run.
START_TIMEOUT_S = 90.0
WORKER_CONCURRENCY = 4


def sizes_for(scale: float) -> dict[str, int]:
    """The workload sizes at ``scale`` (1.0 = WORKLOADS.md). The window and the bulk stay even,
    so the rule passes exactly half of them."""
    window = max(2, round(FULL_SIZES["celery_window"] * scale / 2) * 2)
    latency = max(5, round(FULL_SIZES["latency"] * scale))
    bulk = max(2, round(FULL_SIZES["spark_bulk"] * scale / 2) * 2)
    return {"celery_window": window, "latency": latency, "spark_bulk": bulk}


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

    def __init__(
        self,
        queue: str,
        node: str,
        var_dir: Path | None = None,
        env: dict[str, str] | None = None,
    ):
        """``env`` adds to the worker's environment (an instance name, timings)."""
        from django.conf import settings

        self.queue = queue
        self.hostname = f"{node}@{socket.gethostname()}"
        self.log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop())
            prefix="aqbench-worker-", suffix=".log", delete=False
        )
        full_env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "console.settings"),
            # This process's instance: the suite makes it the owner of its queue tables.
            "AQ_INSTANCE_NAME": settings.AQ_INSTANCE_NAME,
        }
        if var_dir is not None:
            full_env["AQ_VAR_DIR"] = str(var_dir)
        full_env.update(env or {})
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
            env=full_env,
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


def private_var_dir(prefix: str) -> Path:
    """A var directory for the worker alone. Spark jobs keep their spec and driver log under
    ``var/spark/job-<id>``, and ids restart in every database, so a job of another database on
    this machine could otherwise share (and overwrite) this run's files. The filesystem broker's
    folder is shared on purpose: the worker must read the bench's messages."""
    from django.conf import settings

    path = Path(tempfile.mkdtemp(prefix=f"aqbench-{prefix.lower()}-"))
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        (path / "broker").symlink_to(Path(settings.VAR_DIR) / "broker")
    return path


def forget_broker_queue(name: str) -> None:
    """Remove the run's Celery queue (and its exchange binding) from the broker, so repeated
    runs leave no keys behind. Declaring first tells kombu which bindings to delete."""
    from kombu import Exchange, Queue

    from console.celery import app

    with app.connection_for_write() as conn:
        queue = Queue(name, Exchange(name), routing_key=name)(conn.default_channel)
        queue.declare()
        queue.delete()


class BeatEntry(threading.Thread):
    """One of beat's periodic entries, run in this process every ``interval`` seconds
    (:meth:`tick`) until stopped; an error ends it and is reported by the suite."""

    def __init__(self, name: str, interval: float, join_timeout: float = 30):
        super().__init__(name=name, daemon=True)
        self.interval = interval
        self.join_timeout = join_timeout
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def tick(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        from django.db import connection

        try:
            while not self.stopping.is_set():
                self.tick()
                self.stopping.wait(self.interval)
        except BaseException as exc:  # reported by the suite, which then stops
            self.error = exc
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.join_timeout)


class Dispatcher(BeatEntry):
    """The beat's dispatch: open due windows and send each new run to the worker's queue."""

    def __init__(self, queue: str, interval: float):
        super().__init__("aqbench-dispatch", interval)
        self.queue = queue
        self.sent: list[int] = []

    def tick(self) -> None:
        from jobs.services import propagation_dispatch
        from jobs.tasks import propagation_run

        for run_id in propagation_dispatch(send=False):
            propagation_run.apply_async((run_id,), queue=self.queue)
            self.sent.append(run_id)


class Monitor(BeatEntry):
    """The beat's queue monitor (``aq-queue-monitor``, every AQ_MONITOR_INTERVAL_S): timers and
    the storage housekeeping that keeps a queue table's plans sound as history grows."""

    def __init__(self, interval: float):
        super().__init__("aqbench-monitor", interval, join_timeout=60)
        self.vacuumed: list[str] = []

    def tick(self) -> None:
        from queues.tasks import queue_monitor_run

        self.vacuumed += queue_monitor_run().get("vacuumed", [])


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


# --- the remote site (remote_window, remote_latency) ---------------------------------------------


@dataclass(frozen=True)
class RemoteQueue:
    """A queue at the bench's remote site: what the clocks and the checks need of it."""

    pk: int
    name: str
    conninfo: str


def _db_of(queue: Any, conninfo: str) -> str:
    """The database a destination lives in: its own for a :class:`RemoteQueue`, else ours."""
    return getattr(queue, "conninfo", None) or conninfo


_REMOTE_QUEUES = """
import json
from queues import services as qs
names = json.loads({names!r})
qt = qs.queue_table_create(user=None, name={table!r}, sort_order="enq_time")
print(json.dumps({{n: qs.queue_create(user=None, name=n, queue_table=qt).pk for n in names}}))
"""


@dataclass
class RemoteSite:
    """A second database on the bench's own PostgreSQL server, migrated as a site of its own
    (its own AQ_GLOBAL_NAME), with single-consumer queues made there by this project's services,
    and a database link to it. Dropped (link and database) when the run ends."""

    dbname: str
    conninfo: str
    admin_conninfo: str
    global_name: str
    queues: dict[str, RemoteQueue] = field(default_factory=dict)
    link: Any = None

    def drop(self) -> None:
        from sites import services as ss

        if self.link is not None:
            with contextlib.suppress(Exception):
                ss.database_link_drop(user=None, link=self.link)
        with psycopg.connect(self.admin_conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')


def remote_site(conninfo: str, prefix: str, queue_names: list[str], log: Log) -> RemoteSite:
    from django.db import connection

    from sites import services as ss
    from sites.provision import manage_at

    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    dbname = f"{params['dbname']}_{prefix.lower()}"[:63]
    site = RemoteSite(
        dbname=dbname,
        conninfo=psycopg.conninfo.make_conninfo(conninfo, dbname=dbname),
        admin_conninfo=conninfo,
        global_name=f"{prefix}.REMOTE",
    )
    t0 = time.perf_counter()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    url = database_url().rsplit("/", 1)[0] + "/" + quote(dbname, safe="")
    try:
        for args in (
            ["migrate", "--noinput", "-v0"],
            [
                "shell",
                "--no-imports",
                "-c",
                _REMOTE_QUEUES.format(names=json.dumps(queue_names), table=f"{prefix}_REMOTE_SC"),
            ],
        ):
            done = manage_at(url, site.global_name, *args)
            if done.returncode != 0:
                raise BenchError(
                    f"manage.py {args[0]} of the remote site failed: {done.stderr[-2000:]}"
                )
        ids = json.loads(done.stdout.strip().splitlines()[-1])
        site.queues = {n: RemoteQueue(int(ids[n]), n, site.conninfo) for n in queue_names}
        s = connection.settings_dict
        site.link = ss.database_link_create(
            user=None,
            name=f"{prefix}_SITE",
            host=s.get("HOST") or "127.0.0.1",
            port=int(s.get("PORT") or 5432),
            database=dbname,
            username=s.get("USER") or "postgres",
            password=s.get("PASSWORD") or "",
            comment="benchmark; dropped when the run ends",
        )
    except BaseException:
        site.drop()
        raise
    log(
        f"  remote site {site.global_name}: database {dbname} on the same server, migrated "
        f"(not timed, {time.perf_counter() - t0:.1f} s), link {site.link.name}"
    )
    return site


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
    """Delete the bulk jobs, purge (the worker is stopped, so nothing holds a row), then drop
    propagations (their subscribers), rule sets, rules, queues and queue tables, and the worker's
    heartbeat row."""
    from console.bench.queues import _drop as drop_queue_table
    from jobs import services as js
    from jobs.models import SparkJob, Worker
    from queues import services as qs
    from rules import services as rs

    # Bulk jobs hold their queues and propagations (PROTECT); their parts go with them.
    SparkJob.objects.filter(source_queue__queue_table__in=topo.tables).delete()
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


def _load(conninfo: str, queue_id: int, n: int, batch_size: int = LOAD_BATCH) -> None:
    with psycopg.connect(conninfo) as conn:
        info = engine.queue_info(conn, queue_id)
        for start in range(0, n, batch_size):
            batch = [
                engine.NewMessage(payload=payload(i))
                for i in range(start, min(start + batch_size, n))
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


def _source_facts(conninfo: str, queue_id: int, subscriber_ids: list[int]) -> tuple[int, int, int]:
    """(messages, READY messages, copies the subscribers still have to take) at the source."""
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM aq_message WHERE queue_id = %(q)s), "
            "(SELECT count(*) FROM aq_message WHERE queue_id = %(q)s AND state = 'READY'), "
            "(SELECT count(*) FROM aq_message_consumer mc JOIN aq_message m "
            " ON m.id = mc.message_id WHERE m.queue_id = %(q)s "
            " AND mc.subscriber_id = ANY(%(subs)s))",
            {"q": queue_id, "subs": subscriber_ids},
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _empty(conninfo: str, queues: list[Any]) -> None:
    """Purge ``queues`` with the engine and check that nothing is left in them."""
    with psycopg.connect(conninfo) as conn:
        for q in queues:
            engine.purge(conn, engine.queue_info(conn, q.pk), engine.PurgeCondition())
            conn.commit()
        left = conn.execute(
            "SELECT count(*) FROM aq_message WHERE queue_id = ANY(%s)", ([q.pk for q in queues],)
        ).fetchone()
    if not left or left[0]:
        names = ", ".join(q.name for q in queues)
        raise BenchError(f"{left and left[0]} messages are left in {names} after a purge.")


def _vacuum(conninfo: str) -> float:
    """VACUUM the message tables (not timed), so neither bulk workload pays for the dead rows of
    the ones before it. No ANALYZE: statistics outlive the run, and the next run's new subscriber
    ids, absent from them, would look rare to the planner, which then walks a subscriber's whole
    backlog per propagation batch (celery_window fell from thousands to 200/s)."""
    t0 = time.perf_counter()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("VACUUM aq_message, aq_message_consumer")
    return time.perf_counter() - t0


def _own_tables(tables: list[Any], worker: WorkerProcess) -> None:
    """Make the worker's instance (this process's) the primary of the suite's queue tables once
    it is up, so it owns them: a run's claim requires its worker's instance to own the source
    queue table, and without a primary any other live instance on this database (a console's
    worker under another name) could own them and the runs would wait for it."""
    from django.conf import settings
    from django.db.models.functions import Now

    from instances.models import Instance
    from queues import services as qs

    name = settings.AQ_INSTANCE_NAME
    _wait(
        lambda: Instance.objects.filter(name__iexact=name, alive_until__gt=Now()).exists(),
        START_TIMEOUT_S,
        f"the worker's instance {name} to report",
        worker.check,
        every=0.1,
    )
    for t in tables:
        t = qs.queue_table_update(user=None, queue_table=t, primary_instance=name)
        if t.owner_instance is None or t.owner_instance.name.lower() != name.lower():
            raise BenchError(
                f"Instance {name} is up but does not own {t.name}: {t.owner_instance}."
            )


def _runs_ended(propagation_ids: list[int], worker: WorkerProcess, timeout: float) -> None:
    from jobs.models import PropagationRun

    _wait(
        lambda: (
            not PropagationRun.objects.filter(
                propagation_id__in=propagation_ids, state__in=("QUEUED", "RUNNING")
            ).exists()
        ),
        timeout,
        "the propagation runs to end",
        worker.check,
        every=0.2,
    )


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
    *,
    key: str = "celery_window",
) -> dict[str, Any]:
    """``key`` names the figures (``remote_window`` runs the same workload with a destination
    at another site: a :class:`RemoteQueue`, whose commits are clocked and checked there)."""
    from jobs import services as js

    _load(conninfo, source.pk, n)
    log(f"  loaded {n} messages into {source.name} (not timed); scheduling both propagations")
    # One commit clock per database: a remote destination notifies at its own site.
    by_db: dict[str, list[str]] = {}
    for d in destinations:
        by_db.setdefault(_db_of(d, conninfo), []).append(engine.channel_name(d.pk))
    clocks = [CommitClock(db, channels) for db, channels in by_db.items()]
    for c in clocks:
        c.start()
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
        for c in clocks:
            c.stop()
        sampler.stop()
    times = [t for c in clocks for t in c.times]
    if not times:
        raise BenchError("No destination commit was seen.")
    started = min(t["started"] for t in totals.values()).timestamp()
    seconds = max(times) - started
    out: dict[str, Any] = {
        key: round(n / seconds, 1),
        f"{key}_s": round(seconds, 3),
        f"{key}_n": n,
        f"{key}_runs": sum(t["runs"] for t in totals.values()),
        f"{key}_batches": sum(t["batches"] or 0 for t in totals.values()),
        f"{key}_commits_seen": len(times),
        # The runs' own split of their time (summed over both propagations, in seconds).
        f"{key}_dequeue_s": round(sum(t["dequeue_time"] for t in totals.values()), 3),
        f"{key}_rule_s": round(sum(t["rule_time"] for t in totals.values()), 3),
        f"{key}_enqueue_s": round(sum(t["enqueue_time"] for t in totals.values()), 3),
        # Deadlocks PostgreSQL broke in this database during the window (the runner retries
        # them), and where the runs' sessions spent their time.
        f"{key}_deadlocks": _deadlocks(conninfo) - deadlocks,
        f"{key}_sessions": sampler.shares(),
    }
    for i, d in enumerate(destinations, start=1):
        count, distinct, wrong = _destination_facts(_db_of(d, conninfo), d.pk)
        out[f"{key}_delivered_d{i}"] = count
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
    *,
    key: str = "latency",
) -> dict[str, Any]:
    """``key`` names the figures (``remote_latency`` with a :class:`RemoteQueue` destination,
    whose commits are heard at its own site)."""
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
    arrivals = ArrivalClock(_db_of(destination, conninfo), destination.pk)
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
        f"{key}_p50_ms": round(percentile(ms, 50), 1),
        f"{key}_p99_ms": round(percentile(ms, 99), 1),
        f"{key}_max_ms": round(max(ms), 1),
        f"{key}_min_ms": round(min(ms), 1),
        f"{key}_mean_ms": round(sum(ms) / len(ms), 1),
        f"{key}_n": n,
        f"{key}_schedule_latency_s": LATENCY_DEFAULT_S,
        f"{key}_runs": PropagationRun.objects.filter(propagation=propagation).count(),
    }


def bulk_source(
    conninfo: str,
    source: Any,
    destinations: list[Any],
    propagations: list[Any],
    all_propagation_ids: list[int],
    n: int,
    worker: WorkerProcess,
    log: Log,
) -> dict[str, Any]:
    """Make the source of ``sql_limit`` and ``spark_bulk``: no schedule, no run, celery_window's
    messages gone, then ``n`` fresh messages for both propagations (not timed)."""
    from jobs.models import PropagationSchedule

    ids = [p.pk for p in propagations]
    if PropagationSchedule.objects.filter(propagation_id__in=ids).exists():
        raise BenchError("P1 or P2 still has a schedule: a window could race the bulk work.")
    # Disabled and unscheduled windows end at their next heartbeat.
    _runs_ended(all_propagation_ids, worker, START_TIMEOUT_S)
    subs = [p.subscriber_id for p in propagations]
    total, ready, copies = _source_facts(conninfo, source.pk, subs)
    if ready or copies:
        raise BenchError(
            f"celery_window left {ready} READY messages and {copies} subscriber copies at "
            f"{source.name}: it did not drain its source."
        )
    _empty(conninfo, [source, *destinations])
    log(f"  removed celery_window's {total} source messages and its copies at D1 and D2")
    t0 = time.perf_counter()
    _load(conninfo, source.pk, n, BULK_LOAD_BATCH)
    load_s = time.perf_counter() - t0
    _total, _ready, copies = _source_facts(conninfo, source.pk, subs)
    if copies != 2 * n:
        raise BenchError(f"{source.name} holds {copies} subscriber copies, not {2 * n}.")
    vacuum_s = _vacuum(conninfo)
    log(
        f"  loaded {n} messages into {source.name} in {load_s:.1f} s "
        f"({n / load_s:.0f}/s, batches of {BULK_LOAD_BATCH}; not timed), vacuumed in "
        f"{vacuum_s:.1f} s"
    )
    return {"bulk_load_s": round(load_s, 3), "bulk_vacuum_s": round(vacuum_s, 3)}


# The engine's copy of a source message (queues.engine.transfer), for every destination at once.
# No ORDER BY: this is the floor of the insert itself, not of the engine's queue order.
SQL_LIMIT = """
INSERT INTO aq_message (queue_id, queue_table_id, state, priority, sort_pri, commit_seq,
                        kind, type_name, correlation, sender, headers, payload, enq_time,
                        enq_user, attempts, pending_consumers, exception_reason, replayed)
SELECT d.qid, d.qt, 'READY', m.priority, d.by_pri * m.priority, d.cseq, m.kind, m.type_name,
       m.correlation, m.sender, m.headers || jsonb_build_object('aq$_source_msgid', m.id),
       m.payload, now(), %(user)s, 0, 0, '', false
FROM aq_message m
CROSS JOIN (VALUES (%(q1)s::bigint, %(qt1)s::bigint, %(p1)s::int, %(c1)s::bigint, 1),
                   (%(q2)s::bigint, %(qt2)s::bigint, %(p2)s::int, %(c2)s::bigint, 2))
           AS d(qid, qt, by_pri, cseq, pos)
WHERE m.queue_id = %(src)s AND m.payload->>'priority' = '1'
"""


def sql_limit(
    conninfo: str, source: Any, destinations: list[Any], n: int, log: Log
) -> dict[str, Any]:
    """One INSERT … SELECT of the rows ``spark_bulk`` writes, timed as statement + COMMIT; its
    rows are deleted again (not timed)."""
    d1, d2 = destinations
    with psycopg.connect(conninfo) as conn:
        i1, i2 = engine.queue_info(conn, d1.pk), engine.queue_info(conn, d2.pk)
        conn.commit()
        params: dict[str, Any] = {"src": source.pk, "user": "BENCH"}
        for k, info in ((1, i1), (2, i2)):
            params.update(
                {
                    f"q{k}": info.id,
                    f"qt{k}": info.queue_table_id,
                    f"p{k}": 1 if info.by_priority else 0,
                    # NULL: a commit-time queue numbers its rows at COMMIT (a trigger).
                    f"c{k}": None if info.commit_time else 0,
                }
            )
        t0 = time.perf_counter()
        inserted = conn.execute(SQL_LIMIT, params).rowcount
        t1 = time.perf_counter()
        conn.commit()
        t2 = time.perf_counter()
    seconds = t2 - t0
    if inserted != n:
        raise BenchError(f"sql_limit inserted {inserted} rows, not {n} (N/2 to each of D1, D2).")
    for d in destinations:
        count, distinct, wrong = _destination_facts(conninfo, d.pk)
        if count != n // 2 or distinct != count or wrong:
            raise BenchError(
                f"sql_limit left {count} messages at {d.name} ({distinct} distinct sources, "
                f"{wrong} the rule refuses); expected {n // 2}."
            )
    log(
        f"  sql_limit       {n / seconds:>10.1f}/s ({n} in {seconds:.3f} s: statement "
        f"{t1 - t0:.3f} s + COMMIT {t2 - t1:.3f} s)"
    )
    _empty(conninfo, destinations)
    vacuum_s = _vacuum(conninfo)
    log(f"  sql_limit's rows deleted and the tables vacuumed in {vacuum_s:.1f} s (not timed)")
    return {
        "sql_limit": round(n / seconds, 1),
        "sql_limit_s": round(seconds, 3),
        "sql_limit_n": n,
        "sql_limit_statement_s": round(t1 - t0, 3),
        "sql_limit_commit_s": round(t2 - t1, 3),
        "sql_limit_rows": inserted,
    }


def _cancel_spark_jobs(job_ids: list[int], worker: WorkerProcess | None) -> None:
    """Cancel what a failed workload left running, and give the worker's task time to kill the
    driver and mark the row (the driver also stops by itself once the worker is gone)."""
    from jobs import services as js
    from jobs.choices import SPARK_ACTIVE_STATES
    from jobs.models import SparkJob

    live = list(SparkJob.objects.filter(pk__in=job_ids, state__in=SPARK_ACTIVE_STATES))
    for job in live:
        with contextlib.suppress(Exception):
            js.spark_job_cancel(user=None, job=job)
    deadline = time.monotonic() + 30
    while (
        live
        and time.monotonic() < deadline
        and worker is not None
        and worker.proc.poll() is None
        and SparkJob.objects.filter(pk__in=job_ids, state__in=SPARK_ACTIVE_STATES).exists()
    ):
        time.sleep(0.2)


def spark_bulk(
    conninfo: str,
    prefix: str,
    source: Any,
    destinations: list[Any],
    propagations: list[Any],
    n: int,
    worker: WorkerProcess,
    job_ids: list[int],
    log: Log,
    mode: str = "MOVE",
) -> dict[str, Any]:
    """One bulk job, ``local[*]``, through the suite's worker; from submit to SUCCEEDED. MOVE
    (the workload: the propagations' backlog consumed) or COPY (``spark_bulk_copy_*`` keys: the
    source keeps everything, so the rows written are exactly ``sql_limit``'s)."""
    from django.conf import settings
    from django.test.utils import override_settings

    from jobs import services as js
    from jobs.choices import SparkJobState
    from jobs.models import PropagationRun, PropagationSchedule, SparkJob

    ids = [p.pk for p in propagations]
    key = "spark_bulk" if mode == "MOVE" else "spark_bulk_copy"
    log(f"  submitting one Spark bulk job ({mode}, {SPARK_MASTER}) for P1 and P2")
    # The task is sent to the queue this setting names when the submit commits: the worker's.
    spark_cfg = {**settings.AQ_SPARK, "QUEUE": worker.queue}
    t0 = time.time()
    with override_settings(AQ_SPARK=spark_cfg):
        job = js.spark_job_submit(
            user=None,
            source_queue=source,
            propagations=propagations,
            mode=mode,
            master=SPARK_MASTER,
            name=f"{prefix}_BULK_{mode}",
        )
    job_ids.append(job.pk)
    timeout = START_TIMEOUT_S + 120 + n / 500
    deadline = time.monotonic() + timeout
    app_seen: float | None = None
    final = (SparkJobState.SUCCEEDED, SparkJobState.FAILED, SparkJobState.CANCELLED)
    while True:
        worker.check()
        row = SparkJob.objects.filter(pk=job.pk).values("state", "app_id").get()
        if app_seen is None and row["app_id"]:
            app_seen = time.time()
        if row["state"] in final:
            break
        if time.monotonic() > deadline:
            raise BenchError(f"Spark job {job.pk} did not end within {timeout:.0f} s.")
        # Finely until the driver is up (its start-up is measured from here), then gently: the
        # figure is the row's own finished_at, and two cores are shared with Spark.
        time.sleep(0.1 if app_seen is None else 0.5)
    job.refresh_from_db()
    if job.state != SparkJobState.SUCCEEDED:
        tail = " / ".join(ln for ln in job.driver_log_tail.splitlines()[-5:] if ln.strip())
        more = f" [driver log: {tail}]" if tail and tail not in job.error else ""
        raise BenchError(f"Spark job {job.pk} ended {job.state}: {job.error}{more}")
    if job.worker != worker.hostname:
        raise BenchError(f"Spark job {job.pk} ran on {job.worker!r}, not on the suite's worker.")
    assert job.started_at is not None and job.finished_at is not None
    seconds = job.finished_at.timestamp() - t0
    # No window may have raced the job: no schedule, and no run since the submit.
    if (
        PropagationSchedule.objects.filter(propagation_id__in=ids).exists()
        or (
            PropagationRun.objects.filter(propagation_id__in=ids, started_at__gte=job.submitted_at)
        ).exists()
    ):
        raise BenchError("A propagation window ran during the Spark job.")

    parts = list(job.parts.all())
    propagated: dict[str, int] = {}
    for part in parts:
        for name, count in part.propagated.items():
            propagated[name] = propagated.get(name, 0) + count
    totals = {
        "read": sum(p.read for p in parts),
        "discarded": sum(p.discarded for p in parts),
        "exceptions": sum(p.exceptions for p in parts),
        "gone": sum(p.gone for p in parts),
    }
    expected = {d.name: n // 2 for d in destinations}
    if totals != {"read": n, "discarded": n // 2, "exceptions": 0, "gone": 0} or (
        propagated != expected
    ):
        raise BenchError(f"The Spark job's parts count {totals} and {propagated}.")
    out: dict[str, Any] = {
        key: round(n / seconds, 1),
        f"{key}_s": round(seconds, 3),
        f"{key}_n": n,
        # Submit to the worker's claim (broker and task pickup), then the claim to the
        # application id on the row (spark-submit, the JVM, the Python driver, SparkSession).
        f"{key}_startup_s": round((job.started_at - job.submitted_at).total_seconds(), 3),
        f"{key}_driver_startup_s": (
            round(app_seen - job.started_at.timestamp(), 3) if app_seen else None
        ),
        f"{key}_parts": len(parts),
        f"{key}_app_id": job.app_id,
        f"{key}_master": SPARK_MASTER,
        f"{key}_part_size": settings.AQ_SPARK["PART_SIZE"],
    }
    # A part's done_at is its write transaction's start: read and decided by then.
    if parts:
        done = sorted(p.done_at.timestamp() for p in parts)
        out[f"{key}_first_write_s"] = round(done[0] - t0, 3)
        out[f"{key}_last_write_s"] = round(done[-1] - t0, 3)
    for i, d in enumerate(destinations, start=1):
        count, distinct, wrong = _destination_facts(conninfo, d.pk)
        out[f"{key}_delivered_d{i}"] = count
        if count != n // 2 or distinct != count or wrong:
            raise BenchError(
                f"{d.name} holds {count} messages ({distinct} distinct sources, {wrong} the rule "
                f"refuses) after the Spark job; expected {n // 2}."
            )
    _total, ready, copies = _source_facts(
        conninfo, source.pk, [p.subscriber_id for p in propagations]
    )
    if mode == "COPY":
        if ready != n or copies != n * len(propagations):
            raise BenchError(
                f"After the copy {source.name} holds {ready} READY messages and {copies} "
                f"subscriber copies; it must keep all {n}."
            )
        return out
    if ready or copies:
        raise BenchError(
            f"After the Spark job {source.name} still holds {ready} READY messages and {copies} "
            "copies of the propagations' subscribers."
        )
    return out


# --- the suite -----------------------------------------------------------------------------------


def run(*, scale: float = 1.0, baseline: bool = False, log: Log = print) -> dict[str, Any]:
    """Run ``celery_window``, the latency workload, ``sql_limit`` and ``spark_bulk``; return the
    result object."""
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
    monitor: Monitor | None = None
    hostname = f"{prefix.lower()}@{socket.gethostname()}"
    var_dir: Path | None = None
    spark_jobs: list[int] = []
    remote: RemoteSite | None = None
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

        var_dir = private_var_dir(prefix)
        worker = WorkerProcess(celery_queue, prefix.lower(), var_dir)
        hostname = worker.hostname
        _own_tables(topo.tables, worker)
        dispatcher = Dispatcher(celery_queue, settings.AQ_DISPATCH_INTERVAL_S)
        dispatcher.start()
        monitor = Monitor(settings.AQ_MONITOR_INTERVAL_S)
        monitor.start()

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
        # Unscheduled, not just disabled: the bulk workloads below run with no schedule at all.
        for p in window_props:
            js.schedule_delete(user=None, propagation=p)

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

        # The same two workloads with a destination at another site (issue 14).
        remote = remote_site(conninfo, prefix, [f"{prefix}_RD2", f"{prefix}_RLDST"], log)
        link = remote.link.name
        rsrc = qs.queue_create(user=None, name=f"{prefix}_RSRC", queue_table=mc)
        rd1 = qs.queue_create(user=None, name=f"{prefix}_RD1", queue_table=sc)
        rd2 = remote.queues[f"{prefix}_RD2"]
        remote_props = [
            _propagation(f"{prefix}_RP1", rsrc, rd1, half, schedule=False),
            _propagation(f"{prefix}_RP2", rsrc, f"{rd2.name}@{link}", half, schedule=False),
        ]
        topo.propagations.extend(remote_props)
        out.update(
            celery_window(
                conninfo,
                rsrc,
                [rd1, rd2],
                remote_props,
                sizes["celery_window"],
                worker,
                dispatcher,
                log,
                key="remote_window",
            )
        )
        out["remote_window_vs_celery_window"] = round(
            out["remote_window"] / out["celery_window"], 3
        )
        log(
            f"  remote_window   {out['remote_window']:>10}/s ({out['remote_window_n']} in "
            f"{out['remote_window_s']} s, {out['remote_window_runs']} runs, "
            f"{out['remote_window_batches']} batches; "
            f"{out['remote_window_vs_celery_window']}x celery_window)"
        )
        for p in remote_props:
            js.schedule_delete(user=None, propagation=p)
        rlsrc = qs.queue_create(user=None, name=f"{prefix}_RLSRC", queue_table=mc)
        rlprop = _propagation(f"{prefix}_PRL", rlsrc, f"{prefix}_RLDST@{link}", None, True)
        topo.propagations.append(rlprop)
        out.update(
            latency(
                conninfo,
                rlsrc,
                remote.queues[f"{prefix}_RLDST"],
                rlprop,
                sizes["latency"],
                worker,
                dispatcher,
                log,
                key="remote_latency",
            )
        )
        log(
            f"  remote_latency  p50 {out['remote_latency_p50_ms']} ms, p99 "
            f"{out['remote_latency_p99_ms']} ms, max {out['remote_latency_max_ms']} ms "
            f"({out['remote_latency_n']} messages)"
        )
        js.schedule_disable(user=None, propagation=rlprop)

        n_bulk = sizes["spark_bulk"]
        out.update(
            bulk_source(
                conninfo,
                src,
                [d1, d2],
                window_props,
                [p.pk for p in topo.propagations],
                n_bulk,
                worker,
                log,
            )
        )
        out.update(sql_limit(conninfo, src, [d1, d2], n_bulk, log))
        # The copy first: it leaves the source as it found it, for the move.
        out.update(
            spark_bulk(
                conninfo,
                prefix,
                src,
                [d1, d2],
                window_props,
                n_bulk,
                worker,
                spark_jobs,
                log,
                mode="COPY",
            )
        )
        log(
            f"  spark_bulk_copy {out['spark_bulk_copy']:>10}/s ({n_bulk} in "
            f"{out['spark_bulk_copy_s']} s)"
        )
        _empty(conninfo, [d1, d2])
        out["vacuum_after_copy_s"] = round(_vacuum(conninfo), 3)
        out.update(
            spark_bulk(
                conninfo, prefix, src, [d1, d2], window_props, n_bulk, worker, spark_jobs, log
            )
        )
        log(
            f"  spark_bulk      {out['spark_bulk']:>10}/s ({n_bulk} in {out['spark_bulk_s']} s, "
            f"{out['spark_bulk_parts']} parts; to the worker's claim "
            f"{out['spark_bulk_startup_s']} s, driver start-up {out['spark_bulk_driver_startup_s']} s)"
        )
        out["spark_bulk_vs_celery_window"] = round(out["spark_bulk"] / out["celery_window"], 3)
        out["spark_bulk_vs_sql_limit_s"] = round(out["spark_bulk_s"] / out["sql_limit_s"], 3)
        out["spark_bulk_copy_vs_sql_limit_s"] = round(
            out["spark_bulk_copy_s"] / out["sql_limit_s"], 3
        )
        if monitor.error is not None:
            raise BenchError(f"The queue monitor failed: {monitor.error}")
        # Leaves the monitor vacuumed or analysed during the run (as beat's would have).
        out["monitor_vacuums"] = len(monitor.vacuumed)
        out["targets"] = {
            **TARGETS,
            "spark_bulk": round(TARGETS["spark_bulk_vs_celery_window"] * out["celery_window"], 1),
            "spark_bulk_s": round(TARGETS["spark_bulk_vs_sql_limit_s"] * out["sql_limit_s"], 3),
            "remote_window": round(
                TARGETS["remote_window_vs_celery_window"] * out["celery_window"], 1
            ),
        }
    finally:
        if monitor is not None:
            monitor.stop()
        if dispatcher is not None:
            dispatcher.stop()
        if spark_jobs:
            _cancel_spark_jobs(spark_jobs, worker)
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
        try:
            _drop(topo, hostname)
        finally:
            if remote is not None:
                remote.drop()  # after the propagations that use its link
        if var_dir is not None:
            shutil.rmtree(var_dir, ignore_errors=True)
    return out
