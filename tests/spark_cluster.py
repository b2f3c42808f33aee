"""A Spark standalone cluster (one Master, one Worker) on 127.0.0.1, for tests.

No Django here: the module only needs pyspark (for its bundled Spark distribution) and a Java.
See docs/SPARK_DESIGN.md, "Q3. A standalone cluster on loopback, for the tests".

    with LoopbackSparkCluster() as cluster:
        subprocess.run([SPARK_SUBMIT, "--master", cluster.master_url, ...], env=spark_env())
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pyspark

# The pip package carries a full Spark distribution, minus sbin/start-*.sh (design note, pitfall 9).
SPARK_HOME = os.path.dirname(pyspark.__file__)
SPARK_CLASS = os.path.join(SPARK_HOME, "bin", "spark-class")
SPARK_SUBMIT = os.path.join(SPARK_HOME, "bin", "spark-submit")
HOST = "127.0.0.1"

# Spark 4.3 refuses state-changing UI posts without the token rendered in the page's forms.
_CSRF_RE = re.compile(r'name="csrfToken"\s+value="([^"]+)"|value="([^"]+)"\s+name="csrfToken"')


class SparkClusterError(RuntimeError):
    """The cluster did not come up (or a call to its master failed)."""


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (all bound at once, so never the same twice)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def spark_env(**extra: str) -> dict[str, str]:
    """Environment for Spark processes: loopback only (the host name resolves to eth0, pitfall 10)."""
    env = dict(os.environ)
    env.update(SPARK_HOME=SPARK_HOME, SPARK_LOCAL_IP=HOST, **extra)
    return env


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<{path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


def _stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group (the Worker's executors and their Python workers are in it),
    then SIGKILL if it has not exited within ``grace`` seconds."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    # Members of the group may outlive the leader (an executor's Python daemon). The pgid cannot
    # be reused while any member lives, and pids are not recycled within milliseconds.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class LoopbackSparkCluster:
    """One Master and one Worker (``cores`` cores, ``memory`` of memory) on free loopback ports.

    ``start()`` returns once the master is ALIVE with one ALIVE worker; ``stop()`` kills the
    applications still running, then both JVMs. The run folder (logs, work dir with the
    executors' stdout/stderr) is removed by ``stop()`` unless ``keep_run_dir`` is set.
    """

    def __init__(self, *, cores: int = 2, memory: str = "1g", keep_run_dir: bool = False) -> None:
        self.cores = cores
        self.memory = memory
        self.keep_run_dir = keep_run_dir
        self.master_url = ""
        self.ui_url = ""
        self.run_dir: Path | None = None
        self._master: subprocess.Popen[bytes] | None = None
        self._worker: subprocess.Popen[bytes] | None = None
        self._log_files: list[IO[bytes]] = []
        self._stopped = False

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 120) -> LoopbackSparkCluster:
        if self._master is not None:
            raise SparkClusterError("this cluster was already started")
        # Never inside the venv: Spark's defaults would put work/ and logs/ in $SPARK_HOME.
        self.run_dir = Path(tempfile.mkdtemp(prefix="aq-spark-cluster-"))
        logs, work = self.run_dir / "logs", self.run_dir / "work"
        logs.mkdir()
        work.mkdir()
        m_port, m_ui, w_port, w_ui = free_ports(4)
        self.master_url = f"spark://{HOST}:{m_port}"
        self.ui_url = f"http://{HOST}:{m_ui}"
        env = spark_env(SPARK_LOG_DIR=str(logs), SPARK_WORKER_DIR=str(work))
        atexit.register(self.stop)  # a crashed session should not leave JVMs behind
        deadline = time.monotonic() + timeout
        try:
            self._master = self._spawn(
                "master",
                env,
                "org.apache.spark.deploy.master.Master",
                *("--host", HOST, "--port", str(m_port), "--webui-port", str(m_ui)),
            )
            # The worker only after the master answers: a worker that finds no master waits
            # 5-15 s before its next registration attempt.
            self._wait(deadline, lambda s: s.get("status") == "ALIVE")
            self._worker = self._spawn(
                "worker",
                env,
                "org.apache.spark.deploy.worker.Worker",
                *("--host", HOST, "--port", str(w_port), "--webui-port", str(w_ui)),
                *("--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work)),
                self.master_url,
            )
            self._wait(deadline, lambda s: len(self._alive_workers(s)) == 1)
        except BaseException:
            self.stop(keep_run_dir=True)  # keep the logs the exception points at
            raise
        return self

    def stop(self, *, keep_run_dir: bool | None = None) -> None:
        """Kill the running applications, the worker, then the master. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        if self._master is not None and self._master.poll() is None:
            # Best effort: the drivers then learn that their application was killed (design Q3).
            with contextlib.suppress(Exception):
                self.kill_all_apps()
        for proc in (self._worker, self._master):
            if proc is not None:
                _stop_group(proc, grace=20)
        for handle in self._log_files:
            handle.close()
        keep = self.keep_run_dir if keep_run_dir is None else keep_run_dir
        if self.run_dir is not None and not keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> LoopbackSparkCluster:
        if self._master is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- the master's HTTP interface ------------------------------------------------------------

    def state(self, timeout: float = 5) -> dict[str, Any]:
        """The master's ``/json/``: status, workers, activeapps, completedapps."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=timeout) as resp:
            return json.loads(resp.read())

    def kill_all_apps(self, timeout: float = 20) -> list[str]:
        """Kill every active application through the master's UI; return their ids.

        Waits (up to ``timeout``) until the master no longer lists them as active.
        """
        ids = [app["id"] for app in self.state().get("activeapps", [])]
        if not ids:
            return []
        token = self._csrf_token()
        for app_id in ids:
            form = {"id": app_id, "terminate": "true"}
            if token:
                form["csrfToken"] = token
            req = urllib.request.Request(
                f"{self.ui_url}/app/kill/",
                data=urllib.parse.urlencode(form).encode(),
                method="POST",
            )
            # The master answers 302 back to its page; urllib follows it with a GET.
            with urllib.request.urlopen(req, timeout=5):
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            active = {app["id"] for app in self.state().get("activeapps", [])}
            if not active & set(ids):
                break
            time.sleep(0.2)
        return ids

    # -- internals ------------------------------------------------------------------------------

    def _spawn(self, name: str, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
        assert self.run_dir is not None
        log = open(self.run_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self._log_files.append(log)
        # spark-class execs the JVM, so the pid is the JVM and leads its own process group.
        return subprocess.Popen(
            [SPARK_CLASS, *args],
            env=env,
            cwd=self.run_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _wait(self, deadline: float, ready: Callable[[dict[str, Any]], bool]) -> None:
        last: Exception | str = "no answer yet"
        while time.monotonic() < deadline:
            for name, proc in (("master", self._master), ("worker", self._worker)):
                if proc is not None and proc.poll() is not None:
                    raise SparkClusterError(
                        f"the Spark {name} exited with code {proc.returncode}; run folder kept"
                        f" at {self.run_dir}\n{self._logs()}"
                    )
            try:
                state = self.state(timeout=2)
                if ready(state):
                    return
                last = f"status={state.get('status')} workers={state.get('workers')}"
            except (OSError, ValueError) as exc:  # not listening yet, or a partial answer
                last = exc
            time.sleep(0.25)
        raise SparkClusterError(
            f"the Spark cluster was not ready in time (last: {last}); run folder kept at"
            f" {self.run_dir}\n{self._logs()}"
        )

    @staticmethod
    def _alive_workers(state: dict[str, Any]) -> list[dict[str, Any]]:
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def _csrf_token(self) -> str | None:
        with urllib.request.urlopen(f"{self.ui_url}/", timeout=5) as resp:
            match = _CSRF_RE.search(resp.read().decode(errors="replace"))
        return (match.group(1) or match.group(2)) if match else None

    def _logs(self) -> str:
        assert self.run_dir is not None
        return "\n".join(
            f"--- {name}.log (tail) ---\n{_tail(self.run_dir / f'{name}.log')}"
            for name in ("master", "worker")
        )
