"""Celery tasks of the jobs app: thin, take ids only, idempotent."""

from __future__ import annotations

import os
import socket
from typing import Any

from celery import shared_task


# Not acks_late: a run holds its task for a whole slice, and a broker connection lost while a
# message is unacknowledged makes kombu's Redis transport crash the worker as it restores it
# (AttributeError in Channel.close, kombu 5.7). Nothing is lost without it: the claim makes a
# second delivery harmless, and the reaper sends again the task of a run left QUEUED.
@shared_task(name="jobs.tasks.propagation_run", bind=True, ignore_result=True, acks_late=False)
def propagation_run(self: Any, run_id: int) -> str:
    """Run one propagation window's run, on the instance that owns its source queue table. A
    redelivered, duplicated or late task (the owner moved) finds the run claimed or not its own
    (a conditional UPDATE) and does nothing."""
    from django.conf import settings

    from jobs import runner
    from queues.services import conninfo

    hostname = getattr(self.request, "hostname", None) or socket.gethostname()
    return runner.execute(
        run_id,
        conninfo=conninfo(),
        worker=hostname,
        pid=os.getpid(),
        task_id=self.request.id or "",
        instance=settings.AQ_INSTANCE_NAME,
    )


@shared_task(name="jobs.tasks.worker_probe", ignore_result=True, acks_late=False)
def worker_probe() -> None:
    """The consumer watchdog's probe (jobs/watchdog.py): its receipt is what counts."""


@shared_task(name="jobs.tasks.propagation_dispatch", ignore_result=True)
def propagation_dispatch() -> list[int]:
    """Beat: open due windows (no new run while maintenance mode is on)."""
    from jobs.services import propagation_dispatch as dispatch

    return dispatch()


@shared_task(name="jobs.tasks.propagation_reap", ignore_result=True)
def propagation_reap() -> dict[str, int]:
    """Beat: fail runs whose worker died, retire lost ones, mark silent workers stopped."""
    from jobs.services import propagation_reap as reap

    return reap()


# Not acks_late: a job runs for hours, past a broker's redelivery timeout, and the claim already
# makes a second delivery harmless.
@shared_task(name="jobs.tasks.spark_job_run", bind=True, ignore_result=True, acks_late=False)
def spark_job_run(self: Any, job_id: int, attempt: int) -> str:
    """Submit one attempt of a Spark bulk job with ``spark-submit`` and follow it to its end. A
    redelivered or duplicated task finds the attempt claimed and does nothing."""
    from jobs import spark_submit
    from queues.services import conninfo

    hostname = getattr(self.request, "hostname", None) or socket.gethostname()
    return spark_submit.execute(
        job_id, attempt, conninfo=conninfo(), worker=hostname, task_id=self.request.id or ""
    )


@shared_task(name="jobs.tasks.spark_job_reap", ignore_result=True)
def spark_job_reap() -> int:
    """Beat: fail Spark jobs whose following task died."""
    from jobs.services import spark_job_reap as reap

    return reap()
