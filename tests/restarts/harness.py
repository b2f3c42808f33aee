"""A whole console on servers the test owns: a private PostgreSQL (the ``pgserver`` wheel's
binaries, a data directory in a temp dir, a free loopback port) and a private Redis as the Celery
broker, with the web process, the Celery workers of scripts/run-console.sh and beat as
subprocesses. The machine's shared PostgreSQL and Redis are never touched; the foreign system of
the gateway is the machine's RabbitMQ, with queues of unique names.

The test process reads and counts with plain psycopg and writes through the web API (enqueue):
it holds no Django connection to the private server, so stopping that server disturbs only the
processes under test."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
ARTIFACTS = ROOT / "test-artifacts" / "restarts"
FIGURES = ARTIFACTS / "figures.json"

# Small batches, so a restart always finds messages in flight.
SHAPE = {"AQ_PROPAGATION_BATCH": "25"}
# Short timings for every process (each reads them from its environment), so a restart costs
# seconds in the test. AQ_RESTARTS_TIMINGS=production keeps the settings' defaults instead: the
# figures of docs/RESTARTS.md.
SHORT_TIMINGS = {
    "AQ_PROPAGATION_SLICE_S": "5",
    "AQ_PROPAGATION_HEARTBEAT_S": "0.5",
    "AQ_PROPAGATION_BACKOFF_MIN_S": "0.2",
    "AQ_PROPAGATION_BACKOFF_MAX_S": "1",
    "AQ_PROPAGATION_RESEND_S": "2",
    "AQ_SITE_STATEMENT_TIMEOUT_S": "2",
    "AQ_WORKER_HEARTBEAT_S": "0.5",
    # A worker whose consumer a broker restart left stuck starts again after this (jobs/watchdog.py).
    "AQ_WORKER_STALL_S": "5",
    "AQ_DISPATCH_INTERVAL_S": "0.5",
    "AQ_MONITOR_INTERVAL_S": "0.5",
    "MGW_HEARTBEAT_S": "0.3",
    "MGW_STALE_S": "2",
    "MGW_RESTART_DELAY_S": "0.5",
    "MGW_LOOP_WAIT_S": "0.1",
    "MGW_FETCH_WAIT_S": "0.2",
    "MGW_FOREIGN_TIMEOUT_S": "3",
    "MGW_BACKOFF_MIN_S": "0.1",
    "MGW_BACKOFF_MAX_S": "0.5",
}


def timings_name() -> str:
    return os.environ.get("AQ_RESTARTS_TIMINGS", "short")


def timings() -> dict[str, str]:
    return {**SHAPE, **({} if timings_name() == "production" else SHORT_TIMINGS)}


AGENT_USER, AGENT_PASSWORD = "mgw_agent", "mgw-agent-pw"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.1) -> Any:
    """Poll until ``predicate`` is truthy (returned) or ``timeout`` passes (its last value)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except (psycopg.Error, OSError):
            value = None
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


# --- the private servers -------------------------------------------------------------------------


class PrivatePostgres:
    """PostgreSQL 16 from the pgserver wheel. As root it runs as pgserver's own system user (it
    refuses root), as scripts/run-console.sh's embedded server does."""

    def __init__(self, base: Path):
        import pgserver  # noqa: F401  (the wheel's binaries)
        from pgserver._commands import POSTGRES_BIN_PATH

        self.bin = POSTGRES_BIN_PATH
        self.dir = base / "pg"
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.port = free_port()
        self.user = "pgserver" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/aq"

    def conninfo(self, dbname: str = "aq") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname} connect_timeout=3"

    def _run(self, exe: str, *args: str, timeout: float = 90) -> None:
        subprocess.run(
            [str(self.bin / exe), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            user=self.user,
            timeout=timeout,
        )

    def init(self) -> None:
        self.dir.mkdir(parents=True)
        if self.user is not None:
            from pgserver.utils import ensure_user_exists

            ensure_user_exists(self.user)
            entry = pwd.getpwnam(self.user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.dir}'\nmax_connections = 200\n"
                # Only the OS crash that fsync guards against is out of scope here; a killed
                # postmaster (immediate shutdown) still finds every commit in the OS's cache.
                "fsync = off\nfull_page_writes = off\n"
            )

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def answers(self) -> bool:
        try:
            psycopg.connect(self.conninfo("postgres")).close()
            return True
        except psycopg.Error:
            return False


class PrivateRedis:
    """``redis-server --save '' --appendonly no`` on a free port: a restart loses every message
    the broker held, the hardest case for the workers."""

    def __init__(self, base: Path):
        self.dir = base / "redis"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert wait_until(self.answers, 20), "the private redis-server did not start"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(7) == b"+PONG\r\n"
        except OSError:
            return False


# --- the console's processes ---------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        out = self.log_path.open("ab")
        out.write(f"\n==== {time.strftime('%H:%M:%S')} {' '.join(self.args)}\n".encode())
        out.flush()
        self.proc = subprocess.Popen(
            self.args,
            cwd=ROOT,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: gunicorn and Celery fork
        )
        out.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        # Forked children (gunicorn's worker, Celery's pool) go with the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def log(self, tail: int = 4000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-tail:]


@dataclass
class Console:
    base: Path
    pg: PrivatePostgres
    redis: PrivateRedis
    env: dict[str, str] = field(default_factory=dict)
    procs: dict[str, Proc] = field(default_factory=dict)
    web_port: int = 0
    token: str = ""
    ids: dict[str, Any] = field(default_factory=dict)
    amqp_bus: str = ""
    amqp_log: str = ""

    # -- set-up --

    def manage(self, *args: str, timeout: float = 240) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def prepare(self) -> None:
        uid = uuid.uuid4().hex[:8]
        self.amqp_bus, self.amqp_log = f"aq_restarts_{uid}_bus", f"aq_restarts_{uid}_log"
        amqp_declare(self.amqp_bus, self.amqp_log)
        with psycopg.connect(self.pg.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE aq")
            # The agent's own user (MGW's agent user), able to do what the agent does.
            conn.execute(f"CREATE ROLE {AGENT_USER} LOGIN SUPERUSER PASSWORD '{AGENT_PASSWORD}'")
        var = self.base / "var"
        var.mkdir()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AQ_", "MGW_"))},
            **timings(),
            "DATABASE_URL": self.pg.url,
            "CELERY_BROKER_URL": self.redis.url,
            "AQ_VAR_DIR": str(var),
            "SECRET_KEY": "restarts-" + uid,
            "DJANGO_SETTINGS_MODULE": "console.settings",
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "WARNING",
            "RS_AGENT_USER": AGENT_USER,
            "RS_AGENT_PASSWORD": AGENT_PASSWORD,
            "RS_AMQP_BUS": self.amqp_bus,
            "RS_AMQP_LOG": self.amqp_log,
        }
        self.manage("migrate", "--noinput", "-v0")
        out = self.manage(
            "shell", "--no-imports", "-c", "from tests.restarts.topology import build; build()"
        )
        self.ids = json.loads(out.strip().splitlines()[-1])
        self.token = self.ids["token"]

    def start_processes(self) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.web_port = free_port()
        celery = [str(VENV_BIN / "celery"), "-A", "console"]
        worker_opts = ["--loglevel", "INFO", "--without-mingle", "--without-gossip"]
        specs = {
            "web": [
                str(VENV_BIN / "gunicorn"),
                "console.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.web_port}",
                "--workers",
                "1",
                "--threads",
                "4",
                "--worker-class",
                "gthread",
                "--timeout",
                "60",
                "--graceful-timeout",
                "5",
            ],
            # The four processes of scripts/run-console.sh that move messages (no Spark here).
            "worker": [
                *celery,
                "worker",
                "-Q",
                "celery",
                "-c",
                "2",
                "-P",
                "threads",
                "-n",
                "worker@%h",
                *worker_opts,
            ],
            "propagation": [
                *celery,
                "worker",
                "-Q",
                "propagation",
                "-P",
                "threads",
                "-c",
                "4",
                "-n",
                "propagation@%h",
                *worker_opts,
            ],
            "gateway": [
                *celery,
                "worker",
                "-Q",
                "mgw.DEFAULT_AGENT",
                "-P",
                "threads",
                "-c",
                "2",
                "-n",
                "gateway@%h",
                *worker_opts,
            ],
            "beat": [
                *celery,
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.base / "celerybeat-schedule"),
                "--pidfile=",
            ],
        }
        for name, args in specs.items():
            log_path = ARTIFACTS / f"{name}.log"
            log_path.unlink(missing_ok=True)
            self.procs[name] = Proc(name, args, self.env, log_path)
            self.procs[name].start()

    def stop_processes(self) -> None:
        for p in reversed(list(self.procs.values())):
            p.stop()

    def dead_processes(self) -> list[str]:
        return [n for n, p in self.procs.items() if not p.alive()]

    def logs(self) -> str:
        """What a failure message needs: the state of the agent, its jobs and the runs, the
        agent's last log lines, and the end of each process's log."""
        try:
            state = (
                f"agent {self.agent_state()}\njobs "
                f"{self.query('SELECT name, status, failures, last_error_msg FROM gateway_job')}"
                "\nlive runs "
                f"{self.query('SELECT id, state, queued_at, heartbeat_at FROM jobs_propagationrun WHERE ended_at IS NULL')}"
                "\nagent log:\n"
                + "\n".join(
                    f"  {r}"
                    for r in self.query(
                        "SELECT at, severity, component, text FROM gateway_agentlogline "
                        "ORDER BY id DESC LIMIT 15"
                    )
                )
            )
        except psycopg.Error as exc:
            state = f"(database not readable: {exc})"
        return (
            state + "\n" + "\n".join(f"--- {n}.log\n{p.log(2500)}" for n, p in self.procs.items())
        )

    # -- reading the private database --

    def query(self, sql: str, params: Any = None) -> list[tuple]:
        with psycopg.connect(self.pg.conninfo()) as conn:
            return conn.execute(sql, params).fetchall()

    def queue_id(self, name: str) -> int:
        return self.ids["queues"][name]

    def seqs_at(self, queue: str, tag: str, states: tuple[str, ...] = ("READY",)) -> Counter:
        rows = self.query(
            "SELECT (payload->>'seq')::int FROM aq_message WHERE queue_id = %s AND "
            "payload->>'tag' = %s AND state = ANY(%s)",
            (self.queue_id(queue), tag, list(states)),
        )
        return Counter(r[0] for r in rows)

    def arrived(self) -> dict[str, int]:
        """Messages now READY in each destination (all tags)."""
        rows = self.query(
            "SELECT queue_id, count(*) FROM aq_message WHERE queue_id = ANY(%s) AND state = "
            "'READY' GROUP BY queue_id",
            ([self.queue_id("PROP_DST"), self.queue_id("GW_IN")],),
        )
        by_id = dict(rows)
        return {
            "propagation": by_id.get(self.queue_id("PROP_DST"), 0),
            "gateway": by_id.get(self.queue_id("GW_IN"), 0),
        }

    def agent_state(self) -> tuple[str, Any, Any]:
        return self.query(
            "SELECT status, start_time, heartbeat_at FROM gateway_agent WHERE id = %s",
            (self.ids["agent"],),
        )[0]

    def jobs(self) -> dict[str, tuple[str, int]]:
        return {
            n: (s, f) for n, s, f in self.query("SELECT name, status, failures FROM gateway_job")
        }

    # -- writing through the web process --

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.web_port}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()[:2000]

    def enqueue(self, queue: str, tag: str, seqs: range, **extra: Any) -> None:
        """Enqueue through the web process in batches of 100; any answer but 201 fails."""
        for start in range(seqs.start, seqs.stop, 100):
            chunk = range(start, min(start + 100, seqs.stop))
            status, body = self.api(
                "POST",
                f"/api/queues/{queue}/enqueue/",
                {"messages": [{"payload": {"tag": tag, "seq": i}, **extra} for i in chunk]},
            )
            assert status == 201, f"enqueue into {queue} answered {status}: {body!r}"

    def web_answers(self) -> bool:
        try:
            return self.api("GET", "/api/queues/PROP_SRC/", timeout=5)[0] == 200
        except OSError:
            return False


# --- RabbitMQ, the gateway's foreign system ------------------------------------------------------


def _amqp() -> Any:
    import pika

    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))


def amqp_declare(*queues: str) -> None:
    conn = _amqp()
    try:
        ch = conn.channel()
        for q in queues:
            ch.queue_declare(q, durable=True)
    finally:
        conn.close()


def amqp_depth(queue: str) -> int:
    conn = _amqp()
    try:
        return conn.channel().queue_declare(queue, passive=True).method.message_count
    finally:
        conn.close()


def amqp_delete(*queues: str) -> None:
    with contextlib.suppress(Exception):
        conn = _amqp()
        try:
            ch = conn.channel()
            for q in queues:
                ch.queue_delete(q)
        finally:
            conn.close()


# --- the whole thing, for a session fixture ------------------------------------------------------


@contextlib.contextmanager
def private_console() -> Iterator[Console]:
    """Servers, database, topology and processes; everything is stopped and removed on exit,
    whatever happened."""
    base = Path(tempfile.mkdtemp(prefix="aq-restarts-"))
    base.chmod(0o755)  # pgserver's user must reach its data directory inside
    pg, redis = PrivatePostgres(base), PrivateRedis(base)
    console = Console(base, pg, redis)
    try:
        pg.init()
        pg.start()
        redis.start()
        console.prepare()
        console.start_processes()
        ready = wait_until(
            lambda: console.web_answers() and console.agent_state()[0] == "RUNNING", 120, 0.5
        )
        assert ready, f"the console did not come up: {console.agent_state()}\n{console.logs()}"
        yield console
    finally:
        console.stop_processes()
        with contextlib.suppress(Exception):
            if pg.running():
                pg.stop("immediate")
        redis.stop()
        if console.amqp_bus:
            amqp_delete(console.amqp_bus, console.amqp_log)
        if pg.log.exists():
            with contextlib.suppress(OSError):
                shutil.copy(pg.log, ARTIFACTS / "postgres.log")
        shutil.rmtree(base, ignore_errors=True)


# --- one round: load, restart, measure, count ----------------------------------------------------


def record_figures(kind: str, figures: dict[str, float]) -> None:
    """Append one measurement to test-artifacts/restarts/figures.json (per timings, per kind):
    scripts/measure-restarts.sh sums them up."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    data.setdefault(timings_name(), {}).setdefault(kind, []).append(
        {k: round(v, 2) for k, v in figures.items()}
    )
    FIGURES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


class Producer:
    """Enqueues through the web process, a batch per pipeline every ``interval`` seconds, until
    stopped: the load the restarts happen under. A request that fails (the database is down)
    leaves its batch in doubt; once the server answers, the batch's first seq tells whether it
    was committed (a batch is one transaction), and a batch that was not is sent again. So the
    test knows exactly which messages exist, restart or not."""

    BATCH = {"PROP_SRC": 20, "GW_OUT": 8}

    def __init__(self, console: Console, tag: str, interval: float = 0.1):
        import threading

        self.console = console
        self.tag = tag
        self.interval = interval
        self.sent = dict.fromkeys(self.BATCH, 0)  # seqs [0, n) exist in each queue
        self.failed_requests = 0
        self.refusals: Counter = Counter()  # HTTP status of each refused enqueue (0: no answer)
        self.last_ok = 0.0  # monotonic time of the last 201
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer", daemon=True)
        self.error: BaseException | None = None

    def __enter__(self) -> Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive(), "the producer did not stop"
        if self.error is not None:
            raise self.error

    def _batch(self, queue: str) -> None:
        start, n = self.sent[queue], self.BATCH[queue]
        while not self._stop.is_set() or start == self.sent[queue]:
            try:
                status, _ = self.console.api(
                    "POST",
                    f"/api/queues/{queue}/enqueue/",
                    {
                        "messages": [
                            {"payload": {"tag": self.tag, "seq": i}}
                            for i in range(start, start + n)
                        ]
                    },
                )
            except OSError:
                status = 0
            if status == 201:
                self.last_ok = time.monotonic()
                break
            self.failed_requests += 1
            self.refusals[status] += 1
            assert wait_until(self.console.pg.answers, 120), "PostgreSQL did not come back"
            if self.console.seqs_at(queue, self.tag, ALL_STATES).get(start):
                break  # committed after all: the answer was lost, not the batch
            time.sleep(self.interval)
        self.sent[queue] = start + n

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for queue in self.BATCH:
                    self._batch(queue)
                time.sleep(self.interval)
        except BaseException as exc:  # reported by stop()
            self.error = exc


# Every state a message can be in while the test looks (PROCESSED: consumed, kept a moment).
ALL_STATES = ("READY", "WAITING", "PROCESSED", "EXPIRED")


def restart_round(
    console: Console,
    kind: str,
    restart: Callable[[], None],
    *,
    load_s: float = 2.0,
    after_s: float = 2.0,
    deadline: float = 120,
) -> dict[str, float]:
    """Enqueue steadily through the web process, call ``restart`` (stop a server or process,
    start it again; it returns once it is back) while messages are in flight, go on enqueueing,
    then wait for everything. Checks each message arrived exactly once and none stayed at a
    source; returns the seconds from the server being back until the web process took an
    enqueue and each pipeline moved a message again."""
    tag = f"{kind}-{uuid.uuid4().hex[:6]}"
    resumed: dict[str, float] = {}
    with Producer(console, tag) as producer:
        before = console.arrived()
        moving = wait_until(
            lambda: all(v > before[k] for k, v in console.arrived().items()), 60, 0.05
        )
        assert moving, f"nothing moved before the restart: {console.arrived()}\n{console.logs()}"
        time.sleep(load_s)
        # What the restart interrupts: messages still waiting at each source.
        in_flight = {
            "propagation": sum(console.seqs_at("PROP_SRC", tag).values()),
            "gateway": sum(console.seqs_at("GW_OUT", tag).values()),
        }
        restart()
        back = time.monotonic()
        at_back = console.arrived()

        def moved_again() -> bool:
            now = console.arrived()
            for k, v in now.items():
                if k not in resumed and v > at_back[k]:
                    resumed[k] = time.monotonic() - back
            if "web" not in resumed and producer.last_ok > back:
                resumed["web"] = producer.last_ok - back
            return len(resumed) == len(now) + 1

        assert wait_until(moved_again, deadline, 0.05), (
            f"{kind}: did not move again ({resumed}); agent {console.agent_state()}, "
            f"jobs {console.jobs()}\n{console.logs()}"
        )
        time.sleep(after_s)
    expected = {"PROP_DST": producer.sent["PROP_SRC"], "GW_IN": producer.sent["GW_OUT"]}
    done = wait_until(
        lambda: (
            all(sum(console.seqs_at(q, tag).values()) >= n for q, n in expected.items())
            and not console.seqs_at("PROP_SRC", tag, ("READY", "WAITING"))
            and not console.seqs_at("GW_OUT", tag, ("READY", "WAITING"))
        ),
        deadline,
        0.25,
    )
    got = {q: console.seqs_at(q, tag) for q in expected}
    assert done, (
        f"{kind}: { ({q: sum(c.values()) for q, c in got.items()}) } of {expected} arrived; "
        f"agent {console.agent_state()}, jobs {console.jobs()}\n{console.logs()}"
    )
    # Exactly once: every seq, one copy each, and nothing left on the way.
    for q, n in expected.items():
        dupes = {s: c for s, c in got[q].items() if c != 1}
        missing = set(range(n)) - set(got[q])
        extra = set(got[q]) - set(range(n))
        assert not (dupes or missing or extra), (
            f"{kind} at {q}: duplicated {dupes}, lost {sorted(missing)[:20]}, unknown {extra}"
        )
    for q in ("PROP_SRC", "GW_OUT"):
        left = console.seqs_at(q, tag, ("READY", "WAITING", "EXPIRED"))
        assert not left, f"{kind}: {sum(left.values())} message(s) left at {q}"
    assert amqp_depth(console.amqp_bus) == 0
    figures = {f"{k}_resumed_s": v for k, v in resumed.items()}
    figures.update({f"{k}_in_flight": float(v) for k, v in in_flight.items()})
    figures["messages"] = float(sum(expected.values()))
    print(
        f"\n{kind}: moved again after "
        + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(resumed.items()))
        + f"; waiting at the sources at the restart: {in_flight}; "
        f"{sum(expected.values())} messages, {producer.failed_requests} enqueue(s) refused {dict(producer.refusals)}"
    )
    # While a server is away the web process says so (503) or cannot answer at all; never a 500.
    assert set(producer.refusals) <= {0, 503}, f"{kind}: enqueue answers {producer.refusals}"
    return figures


def assert_healthy(console: Console, timeout: float = 30) -> None:
    """No run stuck, the agent and its jobs back to normal, every process alive."""

    def healthy() -> bool:
        status, _, _ = console.agent_state()
        runs = console.query(
            "SELECT state, now() - coalesce(heartbeat_at, queued_at) FROM jobs_propagationrun "
            "WHERE state IN ('QUEUED', 'RUNNING')"
        )
        fresh = all(age.total_seconds() < 10 for _, age in runs)
        jobs_ok = all(s == "READY" and f == 0 for s, f in console.jobs().values())
        return status == "RUNNING" and fresh and jobs_ok

    ok = wait_until(healthy, timeout, 0.25)
    assert ok, (
        f"agent {console.agent_state()}, jobs {console.jobs()}, runs "
        f"{console.query('SELECT id, state, queued_at, heartbeat_at FROM jobs_propagationrun WHERE state IN (%s, %s)', ('QUEUED', 'RUNNING'))}"
        f"\n{console.logs()}"
    )
    assert not console.dead_processes(), f"{console.dead_processes()} exited\n{console.logs()}"
