"""Celery tasks of the queues app: thin, take ids only, idempotent."""

from typing import Any

from celery import shared_task


@shared_task(name="queues.tasks.queue_monitor_run", ignore_result=True)
def queue_monitor_run() -> dict[str, Any]:
    """AQ's queue monitor, run by beat: delays, expirations, lease expiry, retention. Safe to run
    on two workers at once (every step claims rows with SKIP LOCKED)."""
    from queues.services import queue_monitor_run as run

    return run().as_dict()
