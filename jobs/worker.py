"""A Celery worker bootstep that writes the worker's heartbeat row (jobs.Worker) every few
seconds: alive, its queues, pool and what it runs. Celery's own remote control needs a broker
that broadcasts, which the embedded filesystem broker does not."""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

from celery import bootsteps
from celery.signals import celeryd_after_setup, worker_shutting_down
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from jobs import watchdog  # noqa: F401  (connects its signal handlers before the worker starts)

log = logging.getLogger(__name__)


@celeryd_after_setup.connect
def _consume_instance_queue(sender: str, instance: Any, **_: Any) -> None:
    """Each worker also consumes its instance's copy of each queue of its -Q list: work bound to
    a queue table is sent to the copy of the instance that owns it."""
    from instances.selectors import INSTANCE_QUEUE_PREFIX, instance_queue

    queues = instance.app.amqp.queues
    for name in list(queues.consume_from):
        if not name.startswith(INSTANCE_QUEUE_PREFIX) and not name.endswith(".dq2"):
            queues.select_add(instance_queue(settings.AQ_INSTANCE_NAME, name))


@worker_shutting_down.connect
def _end_runs_on_shutdown(**_: Any) -> None:
    """A warm shutdown waits for running tasks: let propagation runs end at their next loop."""
    from jobs.runner import SHUTTING_DOWN

    SHUTTING_DOWN.set()


class HeartbeatStep(bootsteps.StartStopStep):
    requires = {"celery.worker.components:Pool"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        self.worker = worker
        self.started_at = timezone.now()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, worker: Any) -> None:
        from jobs.watchdog import ConsumerWatchdog

        self._watchdog = ConsumerWatchdog(worker, stall_s=settings.AQ_WORKER_STALL_S)
        self._thread = threading.Thread(target=self._loop, name="aq-heartbeat", daemon=True)
        self._thread.start()

    def stop(self, worker: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._beat(stopping=True)

    def _worker_running(self) -> bool:
        # A worker embedded in another program (the tests' start_worker) may end without calling
        # its steps' stop: its blueprint's state says it is over.
        state = getattr(getattr(self.worker, "blueprint", None), "state", None)
        return state not in (bootsteps.CLOSE, bootsteps.TERMINATE)

    def _loop(self) -> None:
        while not self._stop.is_set() and self._worker_running():
            self._beat()
            if self._watchdog.check() and not self._stop.is_set() and self._worker_running():
                self._watchdog.restart()
            self._stop.wait(settings.AQ_WORKER_HEARTBEAT_S)

    def _beat(self, *, stopping: bool = False) -> None:
        from celery.worker import state

        from jobs.services import worker_heartbeat

        w = self.worker
        try:
            # Not the worker's own direct queue (the watchdog's probes): it is no work queue.
            queues = sorted(
                q.name
                for q in w.app.amqp.queues.consume_from.values()
                if not q.name.endswith(".dq2")
            )
        except Exception:
            queues = []
        active = [
            {"id": r.id, "name": r.name, "args": list((r.argsrepr and [r.argsrepr]) or [])}
            for r in list(state.active_requests)
        ]
        try:
            close_old_connections()
            worker_heartbeat(
                hostname=w.hostname,
                pid=os.getpid(),
                queues=queues,
                pool=type(w.pool).__module__.rsplit(".", 1)[-1] if w.pool else "",
                concurrency=int(w.concurrency or 0),
                active=active,
                processed=int(sum(state.total_count.values())),
                started_at=self.started_at,
                stopping=stopping,
                instance=settings.AQ_INSTANCE_NAME,
                host=socket.gethostname(),
            )
        except Exception as exc:
            log.warning("worker heartbeat failed: %s", exc)
