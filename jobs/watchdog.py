"""The consumer watchdog of every Celery worker: it notices a worker that has stopped taking
messages from a broker that is up, and starts the worker process again in place.

Why: after the Redis broker drops a connection, kombu's Redis transport can leave a worker's
consumer connected but no longer polling its queues (celery/celery#8030, #9054, #10205; seen
here after a broker restart with a ``--pool threads`` worker: beat kept sending, nothing ran, no
error). The process stays alive and writes its heartbeat, so only a message through the broker can
tell. Each heartbeat sends a no-op probe task to the worker's own direct queue
(``worker_direct``); the main process notes each probe it receives (``task_received`` fires in the
consumer, before the pool, whatever the pool). Probes published while the worker had a free pool
slot and none received for ``AQ_WORKER_STALL_S``: the consumer is stuck, and the process executes
itself again (same pid, same arguments). Whatever the worker was running stops as a crash would:
propagation runs and gateway agents are built to be taken over after one.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any

from celery.signals import celeryd_after_setup, task_received
from celery.utils.nodenames import worker_direct

log = logging.getLogger(__name__)

PROBE_TASK = "jobs.tasks.worker_probe"

_seen_lock = threading.Lock()
_last_seen: float | None = None
# Set in a process the `celery worker` command started (celeryd_after_setup is sent by it, not by
# a worker embedded in another program, as the tests' start_worker): only such a process may
# execute itself again. Re-executing pytest would start the whole test session over.
_cli_worker = False


@celeryd_after_setup.connect
def _note_cli_worker(**_: Any) -> None:
    global _cli_worker
    _cli_worker = True


@task_received.connect
def _note_probe(request: Any = None, **_: Any) -> None:
    global _last_seen
    if request is not None and getattr(request, "name", "") == PROBE_TASK:
        with _seen_lock:
            _last_seen = time.monotonic()


class _QuietProbes(logging.Filter):
    """Celery logs each task received and succeeded at INFO: not a probe every heartbeat."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (isinstance(args, dict) and args.get("name") == PROBE_TASK)


for _name in ("celery.worker.strategy", "celery.app.trace"):
    logging.getLogger(_name).addFilter(_QuietProbes())


def last_probe_seen() -> float | None:
    with _seen_lock:
        return _last_seen


class ConsumerWatchdog:
    """Called from the heartbeat thread. ``check`` sends a probe when the worker has room for one
    and says whether the consumer is stuck."""

    def __init__(self, worker: Any, *, stall_s: float, clock: Any = time.monotonic) -> None:
        self.worker = worker
        self.stall_s = stall_s
        self.clock = clock
        self.started = clock()
        # Monotonic times of probes published while the pool had a free slot, not yet answered.
        self.pending: list[float] = []

    def _has_room(self) -> bool:
        from celery.worker import state

        # A message waiting for a pool slot holds the prefetch window, so the consumer rightly
        # takes nothing more: that worker is busy, not stuck.
        waiting = len(state.reserved_requests) - len(state.active_requests)
        return waiting <= 0 and len(state.active_requests) < int(self.worker.concurrency or 1)

    def _publish(self) -> bool:
        try:
            self.worker.app.send_task(
                PROBE_TASK,
                queue=worker_direct(self.worker.hostname),
                expires=self.stall_s,
                retry=False,
            )
        except Exception as exc:  # the broker is away: that is not the consumer's fault
            log.debug("worker probe not sent: %s", exc)
            return False
        return True

    def check(self) -> bool:
        now = self.clock()
        seen = last_probe_seen()
        if seen is not None:
            self.pending = [t for t in self.pending if t > seen]
        if not self._has_room():
            self.pending.clear()
            return False
        if self._publish():
            self.pending.append(now)
        # Stuck: probes sent with room to spare for a whole stall period (at least three, so one
        # lost with a broker's memory is not enough), none answered.
        return len(self.pending) >= 3 and now - self.pending[0] >= self.stall_s

    def restart(self) -> None:
        """Execute this worker process again in place, after stopping a prefork pool's children
        (only a process the `celery worker` command started; elsewhere it says so and no more)."""
        waited = self.clock() - self.pending[0] if self.pending else 0.0
        if not _cli_worker:
            log.error(
                "worker %s took no message from the broker for %.0f s; it is embedded in "
                "another program, which is left running",
                self.worker.hostname,
                waited,
            )
            self.pending.clear()
            return
        log.critical(
            "worker %s took no message from the broker for %.0f s while the broker accepted "
            "%d probes: its consumer is stuck; the worker process starts again",
            self.worker.hostname,
            waited,
            len(self.pending),
        )
        pool = getattr(self.worker, "pool", None)
        if pool is not None and type(pool).__module__.endswith("prefork"):
            try:
                pool.terminate()
            except Exception:
                log.exception("the prefork pool did not terminate")
        for h in logging.getLogger().handlers:
            h.flush()
        os.execv(sys.executable, [sys.executable, *sys.argv])
