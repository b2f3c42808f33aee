"""Real Celery processes for the propagation and gateway tests: `celery worker` and `celery beat`
started as subprocesses on the configured broker (Redis), against pytest-django's test database.
The ``celery_procs`` fixture (tests/conftest.py) starts them.

The subprocesses see only committed data, so these tests use ``django_db(transaction=True)``.
The test process drives dispatch and reap itself (``drive``) unless a test starts beat. Both sides
get the same short timings: the worker reads them from its environment, and the test process's
settings are patched to match, because a run failed by the reaper here backs off with this
process's numbers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings as django_settings
from django.db import connection

from jobs import services
from jobs.models import Worker

ROOT = Path(__file__).resolve().parents[2]
CELERY_BIN = Path(sys.executable).with_name("celery")
ARTIFACTS = ROOT / "test-artifacts" / "celery"

# Environment variable → key of settings.AQ_PROPAGATION (None: a top-level setting).
TIMING_KEYS: dict[str, tuple[str, str | None]] = {
    "AQ_PROPAGATION_SLICE_S": ("SLICE_S", None),
    "AQ_PROPAGATION_HEARTBEAT_S": ("HEARTBEAT_S", None),
    "AQ_PROPAGATION_BACKOFF_MIN_S": ("BACKOFF_MIN_S", None),
    "AQ_PROPAGATION_BACKOFF_MAX_S": ("BACKOFF_MAX_S", None),
    "AQ_PROPAGATION_BATCH": ("BATCH", None),
    "AQ_WORKER_HEARTBEAT_S": ("AQ_WORKER_HEARTBEAT_S", "top"),
    "AQ_DISPATCH_INTERVAL_S": ("AQ_DISPATCH_INTERVAL_S", "top"),
    "AQ_WORKER_STALL_S": ("AQ_WORKER_STALL_S", "top"),
}

DEFAULT_TIMINGS: dict[str, float] = {
    "AQ_PROPAGATION_SLICE_S": 5,
    "AQ_PROPAGATION_HEARTBEAT_S": 0.2,
    "AQ_PROPAGATION_BACKOFF_MIN_S": 0.2,
    "AQ_PROPAGATION_BACKOFF_MAX_S": 1,
    "AQ_PROPAGATION_BATCH": 50,
    "AQ_WORKER_HEARTBEAT_S": 0.5,
    "AQ_DISPATCH_INTERVAL_S": 0.5,
}


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 20.0,
    *,
    interval: float = 0.05,
    drive: bool = False,
) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` passes
    (returns the last falsy value). ``drive``: run reap and dispatch each round, as beat would."""
    deadline = time.monotonic() + timeout
    while True:
        if drive:
            services.propagation_reap()
            services.propagation_dispatch()
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


@dataclass
class CeleryProcess:
    name: str
    proc: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def hostname(self) -> str:
        return f"{self.name}@{socket.gethostname()}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group and wait for the leader to exit."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_registered(self, timeout: float = 30.0) -> Worker:
        """Until the worker's heartbeat row shows it (its pool is up and it consumes)."""
        row = wait_for(
            lambda: Worker.objects.filter(hostname=self.hostname, pid=self.pid).first(),
            timeout,
            interval=0.1,
        )
        assert row is not None, f"worker {self.hostname} never reported; log:\n{self.log()[-3000:]}"
        return row


class CeleryProcesses:
    """Start real `celery worker` / `celery beat` subprocesses; all are killed at teardown."""

    def __init__(self, settings: Any, artifacts: Path, tmp_path: Path) -> None:
        self.settings = settings
        self.artifacts = artifacts
        self.tmp_path = tmp_path
        self.procs: list[CeleryProcess] = []
        self.timings: dict[str, float] = {}
        self.env = self._base_env()
        self.configure(**DEFAULT_TIMINGS)

    def _base_env(self) -> dict[str, str]:
        db = connection.settings_dict
        auth = quote(db["USER"] or "", safe="")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"], safe="")
        host = db.get("HOST") or "127.0.0.1"
        port = db.get("PORT") or 5432
        env = {k: v for k, v in os.environ.items() if k not in TIMING_KEYS}
        env.update(
            {
                # pytest-django's test database, not the one DATABASE_URL names.
                "DATABASE_URL": f"postgres://{auth}@{host}:{port}/{db['NAME']}",
                "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
                "DJANGO_SETTINGS_MODULE": "console.settings",
                "PYTHONUNBUFFERED": "1",
                "LOG_LEVEL": "WARNING",
            }
        )
        return env

    def configure(self, **timings: float) -> None:
        """Set timings (env var names) for processes started from now on, and mirror them into
        this process's settings."""
        self.timings.update(timings)
        prop = dict(self.settings.AQ_PROPAGATION)
        for var, value in timings.items():
            key, where = TIMING_KEYS[var]
            self.env[var] = str(value)
            if where == "top":
                setattr(self.settings, key, float(value))
            else:
                prop[key] = int(value) if key == "BATCH" else float(value)
        self.settings.AQ_PROPAGATION = prop

    def _start(
        self, name: str, args: list[str], env: dict[str, str] | None = None
    ) -> CeleryProcess:
        log_path = self.artifacts / f"{name}.log"
        out = log_path.open("ab")
        out.write(f"\n==== {time.strftime('%H:%M:%S')} {' '.join(args)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            [str(CELERY_BIN), "-A", "console", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, for killpg
        )
        out.close()
        p = CeleryProcess(name, proc, log_path)
        self.procs.append(p)
        return p

    def worker(
        self,
        name: str,
        *,
        concurrency: int = 4,
        spark: bool = False,
        env: dict[str, str] | None = None,
    ) -> CeleryProcess:
        queues = f"celery,{self.settings.AQ_PROPAGATION['QUEUE']}"
        if spark:
            queues += f",{self.settings.AQ_SPARK['QUEUE']}"
        return self.worker_on(name, queues, concurrency=concurrency, env=env)

    def worker_on(
        self, name: str, queues: str, *, concurrency: int = 4, env: dict[str, str] | None = None
    ) -> CeleryProcess:
        """A threads worker on the comma-separated Celery ``queues``; ``env`` adds to this
        process group's environment (an ``AQ_INSTANCE_NAME``, say)."""
        return self._start(
            name,
            [
                "worker",
                "-Q",
                queues,
                "-P",
                "threads",
                "-c",
                str(concurrency),
                "--loglevel",
                "INFO",
                "-n",
                f"{name}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
            env,
        )

    def beat(self, name: str = "beat") -> CeleryProcess:
        return self._start(
            name,
            [
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.tmp_path / "celerybeat-schedule"),
                "--pidfile=",
            ],
        )

    def stop_all(self) -> None:
        for p in reversed(self.procs):
            p.kill()


def purge_broker(url: str) -> None:
    """Drop every message left on the broker by earlier tests, so no stale run task executes."""
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url)
        try:
            client.flushdb()
        finally:
            client.close()
    else:
        from console.celery import app

        app.control.purge()
