"""The Django side of a Spark bulk job: its frozen spec, the checks before submission, the
``spark-submit`` command line, and following the driver until it ends.

The Celery task (``jobs.tasks.spark_job_run``) calls :func:`execute`; it never starts a
SparkSession itself. The driver runs in a ``spark-submit`` process of its own session (process
group), so cancel is a signal to that group; the application talks back in JSON lines on stdout
(see ``jobs/spark/app.py``) and writes its committed counters to ``aq_bulk_part``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.exceptions import DomainError

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "jobs" / "spark" / "app.py"
PART_SIZE = 50_000  # source messages per part (one writer transaction each)
LOG_TAIL = 8_000  # characters of the driver log kept on the job row
# While the driver runs, its log tail is saved this often (and with each phase move), so the
# job's page, which polls the row, shows it live rather than only once the job has ended.
LOG_TAIL_EVERY_S = 3.0
GRACE_S = 10.0  # after SIGTERM, before SIGKILL
# What the executors import: the pure modules only (no Django). Zipped once per process.
_CODE = (
    "core/__init__.py",
    "core/exceptions.py",
    "core/storable.py",
    "queues/__init__.py",
    "jobs/__init__.py",
    "rules/__init__.py",
)
_CODE_DIRS = ("queues/engine", "rules/lang", "jobs/spark")


class SubmitError(DomainError):
    """The job cannot run as asked (found at submission or by the task's checks)."""


def config() -> dict[str, Any]:
    return settings.AQ_SPARK


# --- the spec ------------------------------------------------------------------------------------


def _rules(rule_set: Any, *, transforms: bool) -> list[dict[str, Any]] | None:
    """A rule set's enabled rules in evaluation order, with each rule's variables and (for a
    positive set) its transformations, as the Spark side rebuilds them."""
    from rules.selectors import rule_transforms_spec
    from rules.services import transformation_registry

    if rule_set is None:
        return None
    registry = transformation_registry()
    out = []
    members = rule_set.members.filter(enabled=True).select_related(
        "rule", "rule__evaluation_context", "rule__custom_transform"
    )
    # The members' own order (by rule name), as rule_set_spec evaluates them: "the first TRUE
    # positive rule" picks the same transformation as a propagation's run.
    for m in members:
        ctx = m.rule.evaluation_context or rule_set.evaluation_context
        item: dict[str, Any] = {
            "name": m.rule.name,
            "condition": m.rule.condition,
            "variables": ctx.variable_kinds() if ctx is not None else None,
        }
        if transforms:
            t = rule_transforms_spec(m.rule, registry=registry)
            if not t.is_empty:
                item["transform"] = {
                    "action_context": dict(t.action_context),
                    "declarative": [d.stored() | {"table": d.table} for d in t.declarative],
                    "custom_name": t.custom_name,
                    "custom_path": registry.get(t.custom_name, "") if t.custom_name else "",
                }
        out.append(item)
    return out


def _destination(conn: Any, d: Any) -> dict[str, Any]:
    from queues import engine

    info = engine.queue_info(conn, d.queue_id)
    out: dict[str, Any] = {
        "queue_id": info.id,
        "name": info.name,
        "queue_table_id": info.queue_table_id,
        "by_priority": info.by_priority,
        "commit_time": info.commit_time,
        "channel": info.channel,
        "queue_info": asdict(info),
        "propagation": None,
        "subscriber_id": None,
        "positive": None,
        "negative": None,
    }
    p = d.propagation
    if p is not None:
        out.update(
            propagation=p.name,
            subscriber_id=p.subscriber_id,
            positive=_rules(p.positive_rule_set, transforms=True),
            negative=_rules(p.negative_rule_set, transforms=False),
        )
    return out


def build_spec(job: Any) -> dict[str, Any]:
    """Everything the application needs except the connection string (kept out of the database)
    and the frozen bounds (:func:`freeze`). Built anew at every attempt, so a re-run sees the
    rule sets, transformations and queue settings of now; only the parts are frozen."""
    from queues import engine
    from queues.services import raw_connection

    conn = raw_connection()
    src = engine.queue_info(conn, job.source_queue_id)
    gone = [d.queue_name for d in job.destinations.all() if d.queue_id is None]
    if job.source_queue_id is None or gone:
        what = f"queue {job.source_name}" if job.source_queue_id is None else ", ".join(gone)
        raise SubmitError(f"The job's {what} was dropped since it was submitted.")
    dests = [
        _destination(conn, d)
        for d in job.destinations.select_related(
            "propagation__positive_rule_set", "propagation__negative_rule_set"
        ).order_by("position", "pk")
    ]
    conditions = bool(job.condition) or any(d["positive"] or d["negative"] for d in dests)
    return {
        "job_id": job.pk,
        "mode": job.mode,
        "dry_run": job.dry_run,
        "user": job.submitted_by or f"spark job {job.pk}",
        "stat_shards": engine.STAT_SHARDS,
        "source": {
            "id": src.id,
            "name": src.name,
            "multiple_consumers": src.multiple_consumers,
            "retention_time": src.retention_time,
            "exception_queue_id": src.exception_queue_id,
            "queue_info": asdict(src),
        },
        "selection": {
            "kind": job.selection,
            "enq_time_from": job.enq_time_from.isoformat() if job.enq_time_from else None,
            "enq_time_to": job.enq_time_to.isoformat() if job.enq_time_to else None,
            "correlation": job.correlation or None,
            "condition": job.condition or None,
            "variables": dict(engine.QUEUE_RULE_VARIABLES),
        },
        "destinations": dests,
        "needs_rows": conditions,
        "needs_payload": any(r.get("transform") for d in dests for r in d["positive"] or ()),
        "max_id": None,
        "parts": [],
    }


def freeze(spec: dict[str, Any]) -> dict[str, Any]:
    """Fix the job's messages: the highest id now, and balanced id ranges of about PART_SIZE
    selected messages each. A re-run reuses them, so part *p* always means the same messages."""
    from jobs.spark.source import selection_sql
    from queues.services import raw_connection

    conn = raw_connection()
    max_id = conn.execute("SELECT coalesce(max(id), 0) FROM aq_message").fetchone()[0]
    spec = {**spec, "max_id": max_id}
    where, params = selection_sql(spec)
    size = int(config()["PART_SIZE"])
    rows = conn.execute(
        f"""
        SELECT min(id), max(id), count(*) FROM (
            SELECT m.id, (row_number() OVER (ORDER BY m.id) - 1) / {size} AS part
            FROM aq_message m WHERE {where}
        ) x GROUP BY part ORDER BY part
        """,
        params,
    ).fetchall()
    if not rows:
        raise SubmitError(
            f"Queue {spec['source']['name']} holds no message this job selects: nothing to "
            "propagate.",
            field="source_queue",
        )
    # Ranges cover the gaps between parts, so they are contiguous up to max_id.
    parts, lo = [], 0
    for i, (_first, last, _n) in enumerate(rows):
        hi = max_id if i == len(rows) - 1 else last
        parts.append([lo, hi])
        lo = hi + 1
    spec["parts"] = parts
    spec["selected"] = sum(r[2] for r in rows)
    return spec


# --- the master ----------------------------------------------------------------------------------


def memory_mb(text: str) -> int:
    """Spark's memory strings (``512m``, ``2g``, ``1024``: MiB when no unit)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", (text or "").lower(), re.ASCII)
    if not m:
        raise SubmitError(
            f"{text!r} is not a memory size; write a number with k, m, g or t, like 512m or 2g.",
            field="executor_memory",
        )
    n, unit = int(m.group(1)), m.group(2) or "m"
    mb = {"k": n / 1024, "m": n, "g": n * 1024, "t": n * 1024 * 1024}[unit]
    if mb < 32:
        raise SubmitError("An executor needs at least 32m of memory.", field="executor_memory")
    return int(mb)


_MASTER = re.compile(
    r"local(\[(\*|(?P<threads>\d+))(,(?P<failures>\d+))?\])?|spark://[^/\s:]+:(?P<port>\d+)",
    re.ASCII,  # Spark reads ASCII digits only; "\d" would take Arabic-Indic ones too
)
# Spark reads the numbers of local[N,F] as Java ints.
_JAVA_INT_MAX = 2**31 - 1


def master_of(job: Any) -> str:
    return job.master or settings.SPARK_MASTER


def check_master_syntax(master: str) -> None:
    m = _MASTER.fullmatch(master)
    if not m:
        raise SubmitError(
            f"{master!r} is not a Spark master this console submits to: use local, local[N], "
            "local[*] or spark://HOST:PORT (a standalone cluster).",
            field="master",
        )
    if m["port"] is not None and not 1 <= int(m["port"]) <= 65535:
        raise SubmitError(f"{master!r}: the port is 1 to 65535.", field="master")
    if m["threads"] is not None and not 1 <= int(m["threads"]) <= _JAVA_INT_MAX:
        raise SubmitError(
            f"{master!r}: local[N] runs 1 to {_JAVA_INT_MAX} threads.", field="master"
        )
    if m["failures"] is not None and not 1 <= int(m["failures"]) <= _JAVA_INT_MAX:
        raise SubmitError(
            f"{master!r}: local[N,F] allows 1 to {_JAVA_INT_MAX} task failures.", field="master"
        )


def master_ui_url(master: str) -> str:
    """The standalone master's web UI, whose /json/ tells its workers' free cores and memory."""
    url = config()["MASTER_UI_URL"]
    if url:
        return url.rstrip("/")
    return f"http://{urlsplit(master).hostname}:8080"


def check_master(job: Any) -> dict[str, Any] | None:
    """Before submitting: the master answers, and has a worker with room for one executor of the
    size asked (a standalone master would otherwise keep the application WAITING for ever).
    Returns the master's state, or None in local mode."""
    master = master_of(job)
    check_master_syntax(master)
    if master.startswith("local"):
        return None
    parts = urlsplit(master)
    host, port = parts.hostname or "", parts.port or 7077
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        raise SubmitError(
            f"The Spark master {master} is unreachable: {exc.strerror or exc}.", field="master"
        ) from exc
    try:
        with urllib.request.urlopen(master_ui_url(master) + "/json/", timeout=5) as r:
            state = json.load(r)
    except (OSError, ValueError):
        return None  # the port answers but its UI does not: submit and let Spark tell
    alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
    need = memory_mb(job.executor_memory)
    if not alive:
        raise SubmitError(f"The Spark master {master} has no live worker.", field="master")
    biggest = max(w.get("memory", 0) for w in alive)
    if need > biggest:
        raise SubmitError(
            f"An executor of {job.executor_memory} ({need} MiB) does not fit on any worker of "
            f"{master}: the largest has {biggest} MiB.",
            field="executor_memory",
        )
    most_cores = max(w.get("cores", 0) for w in alive)
    if job.executor_cores > most_cores:
        raise SubmitError(
            f"An executor of {job.executor_cores} cores does not fit on any worker of {master}: "
            f"the largest has {most_cores}.",
            field="executor_cores",
        )
    return state


# --- the command line ----------------------------------------------------------------------------


def code_zip() -> Path:
    """The pure modules the executors import, for ``--py-files`` (a remote cluster has no copy
    of this project; a local one gets it too, so both run the same way)."""
    files = [ROOT / rel for rel in _CODE]
    for d in _CODE_DIRS:
        files.extend(sorted((ROOT / d).glob("*.py")))
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    # Named by content: an upgraded project never ships yesterday's code to the executors.
    folder = Path(settings.VAR_DIR) / "spark"
    out = folder / f"aq-spark-code-{digest.hexdigest()[:16]}.zip"
    if out.exists():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for path in files:
            z.write(path, str(path.relative_to(ROOT)))
    tmp.replace(out)
    for stale in folder.glob("aq-spark-code-*.zip"):
        if stale != out and time.time() - stale.stat().st_mtime > 86400:
            stale.unlink(missing_ok=True)  # a day old: no job still reads it
    return out


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def command(job: Any, spec_path: Path) -> tuple[list[str], dict[str, str]]:
    """``spark-submit`` as an argument list (no shell) and its environment."""
    master = master_of(job)
    loopback = master.startswith("local") or (urlsplit(master).hostname or "").startswith("127.")
    confs = {
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.ui.showConsoleProgress": "false",
        # Spark's INFO start-up chatter would push everything useful out of the log's tail.
        "spark.log.level": "WARN",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        # Custom transformations are imported by dotted path: the executors need the project.
        "spark.executorEnv.PYTHONPATH": str(ROOT),
    }
    if loopback:
        confs.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    if java_options := config().get("JAVA_OPTIONS", "").strip():
        confs.update(
            {
                "spark.driver.extraJavaOptions": java_options,
                "spark.executor.extraJavaOptions": java_options,
            }
        )
    if master.startswith("spark://"):
        confs.update(
            {
                "spark.executor.memory": job.executor_memory,
                "spark.executor.cores": str(job.executor_cores),
                "spark.cores.max": str(job.executor_cores * job.executors),
            }
        )
    argv = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        master,
        "--name",
        f"aq-bulk-job-{job.pk}",
        "--driver-memory",
        config()["DRIVER_MEMORY"],
    ]
    for k, v in confs.items():
        argv += ["--conf", f"{k}={v}"]
    argv += ["--py-files", str(code_zip()), str(APP), str(spec_path)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_HOME": str(spark_home()),
    }
    if loopback:
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    java = config()["JAVA_HOME"]
    if java:
        env["JAVA_HOME"] = java
    return argv, env


# --- running and following the driver ------------------------------------------------------------


class Driver:
    """One ``spark-submit`` process in a session of its own, with its stdout events queued by a
    reader thread and its stderr in a log file."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path):
        self.log_path = log_path
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._log = open(log_path, "ab")  # noqa: SIM115 (closed in wait())
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=str(log_path.parent),
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    self.events.put(json.loads(line))
            # Events go to the log too, stamped, so its tail tells the job's story in order.
            self._log.write(time.strftime("%H:%M:%S ").encode() + raw)
            self._log.flush()

    def kill(self) -> None:
        """SIGTERM the whole group (spark-submit's JVM and the Python driver), SIGKILL after a
        grace period. Any kill point is safe: each part commits with its marker or not at all."""
        for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def finish(self) -> int:
        rc = self.proc.wait()
        self._reader.join(5)
        # The group may keep children (the Python driver) after the JVM exits: end them too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()
        return rc

    def tail(self, chars: int = LOG_TAIL) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


def job_dir(job_id: int) -> Path:
    # Job ids restart in every database (a test database beside the console's): name both.
    db = re.sub(r"[^\w.-]+", "_", str(connection.settings_dict["NAME"]))
    d = Path(settings.VAR_DIR) / "spark" / f"{db}-job-{job_id}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_spec_file(spec: dict[str, Any], conninfo: str, attempt: int) -> Path:
    """The spec with the connection string, readable by this user only (it may hold a password)."""
    path = job_dir(spec["job_id"]) / f"spec-{attempt}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({**spec, "conninfo": conninfo, "attempt": attempt}, f)
    return path


def execute(job_id: int, attempt: int, *, conninfo: str, worker: str, task_id: str) -> str:
    """The task body: claim the job's attempt, check, submit, follow until the driver ends, and
    leave the row in SUCCEEDED, FAILED or CANCELLED. A duplicate task finds it claimed."""
    from jobs import services

    job = services.spark_job_claim(job_id, attempt, worker=worker, task_id=task_id)
    if job is None:
        return "skipped"
    path: Path | None = None
    try:
        check_master(job)
        spec = build_spec(job)
        frozen = job.spec
        if frozen is None or not frozen.get("parts"):
            services.spark_job_update(job, heartbeat_at=timezone.now())
            frozen = services.spark_job_freeze(job, freeze(spec))
        spec.update(max_id=frozen["max_id"], parts=frozen["parts"], selected=frozen.get("selected"))
        spec["watch_pid"] = os.getpid()
        path = write_spec_file(spec, conninfo, attempt)
        argv, env = command(job, path)
        if not services.spark_job_update(job, heartbeat_at=timezone.now()):
            _remove(path)
            return "skipped"  # reaped or cancelled while it was being prepared
        log_path = job_dir(job_id) / f"driver-{attempt}.log"
        driver = Driver(argv, env, log_path)
    except DomainError as exc:
        services.spark_job_finish(job, failed=str(exc))
        _remove(path)
        return "failed"
    except Exception as exc:  # the row must never stay RUNNING behind a crashed task
        services.spark_job_finish(job, failed=f"{type(exc).__name__}: {exc}")
        _remove(path)
        raise
    try:
        services.spark_job_update(job, pid=driver.proc.pid)
        return follow(job, driver)
    finally:
        _remove(path)  # it holds the connection string


def _remove(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def next_phase(job: Any, phase: str, ev: dict[str, Any] | None) -> str:
    """The phase the driver's report ``ev`` (or, with none, the committed parts) moves a running
    attempt to; never back. STARTING until the application has planned its parts and asked for
    its first stage (``plan`` with parts to do, or a stage's tasks counted); WRITING once a task
    of a writing run is done (its parts are committed whole before it ends) or a part of this
    attempt is committed; a dry run writes nothing, so it reads until it ends."""
    from jobs import selectors
    from jobs.choices import SPARK_PHASE_ORDER, SparkJobPhase

    seen = SparkJobPhase.STARTING
    kind = (ev or {}).get("event")
    if kind == "plan" and ev.get("todo"):  # type: ignore[union-attr]
        seen = SparkJobPhase.READING
    elif kind == "progress" and ev.get("tasks_total"):  # type: ignore[union-attr]
        seen = SparkJobPhase.READING
        if ev.get("tasks_done") and not job.dry_run:  # type: ignore[union-attr]
            seen = SparkJobPhase.WRITING
    if (
        phase == SparkJobPhase.READING
        and not job.dry_run
        and selectors.spark_job_parts_written(job.pk, job.attempt)
    ):
        seen = SparkJobPhase.WRITING
    return seen if SPARK_PHASE_ORDER[seen] > SPARK_PHASE_ORDER[phase] else phase


def follow(job: Any, driver: Driver) -> str:
    from jobs import selectors, services

    timeout = float(config()["TIMEOUT_S"])
    started = time.monotonic()
    error: str | None = None
    finished = False
    cancelled = False
    dry: dict[str, Any] | None = None
    phase, phase_at = job.phase, dict(job.phase_at or {})
    tail_at, saved_tail = time.monotonic(), ""
    while True:
        try:
            ev = driver.events.get(timeout=1.0)
        except queue.Empty:
            ev = None
        changes: dict[str, Any] = {}
        if (moved := next_phase(job, phase, ev)) != phase:
            phase = moved
            phase_at[phase] = timezone.now().isoformat()
            changes.update(phase=phase, phase_at=dict(phase_at))
        if changes or time.monotonic() - tail_at >= LOG_TAIL_EVERY_S:
            tail_at = time.monotonic()
            # The same tail as the one saved at the end; written only when it has grown.
            if (tail := driver.tail()) != saved_tail:
                changes["driver_log_tail"] = saved_tail = tail
        if ev is not None:
            kind = ev.get("event")
            if kind == "started":
                changes["app_id"] = str(ev.get("app_id", ""))[:128]
            elif kind == "progress":
                changes.update(tasks_done=ev["tasks_done"], tasks_total=ev["tasks_total"])
            elif kind == "dry_run":
                dry = {k: ev[k] for k in ("read", "discarded", "per_destination")}
            elif kind == "finished":
                finished = True
            elif kind == "error":
                error = str(ev.get("message", "the application failed"))
        if not cancelled and selectors.spark_job_cancel_requested(job.pk):
            cancelled = True
            driver.kill()
        elif not cancelled and time.monotonic() - started > timeout:
            error = f"the job ran longer than its {timeout:.0f} s limit (AQ_SPARK_TIMEOUT_S)"
            driver.kill()
        if not services.spark_job_update(job, heartbeat_at=timezone.now(), **changes):
            # The row is no longer this attempt's (the reaper failed it during a stall, or a
            # newer attempt took over): stop the driver rather than let it run unsupervised.
            driver.kill()
            driver.finish()
            return "superseded"
        if driver.proc.poll() is not None and driver.events.empty():
            break
    rc = driver.finish()
    while not driver.events.empty():  # lines read after the last poll
        ev = driver.events.get()
        if ev.get("event") == "finished":
            finished = True
        elif ev.get("event") == "error":
            error = str(ev.get("message"))
        elif ev.get("event") == "dry_run":
            dry = {k: ev[k] for k in ("read", "discarded", "per_destination")}
    tail = driver.tail()
    if cancelled:
        services.spark_job_finish(job, cancelled=True, log_tail=tail)
        return "cancelled"
    if rc == 0 and finished and error is None:
        services.spark_job_finish(job, log_tail=tail, dry_run_result=dry)
        return "succeeded"
    if error is None:
        last = [ln for ln in tail.splitlines() if ln.strip()][-3:]
        error = f"spark-submit exited with {rc}" + (": " + " / ".join(last) if last else "")
    services.spark_job_finish(job, failed=error, log_tail=tail)
    return "failed"
