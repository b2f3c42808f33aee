"""Celery tasks of the queues app: thin, take ids only, idempotent."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import current_app, shared_task
from django.conf import settings

log = logging.getLogger(__name__)


@shared_task(name="queues.tasks.queue_monitor_run", ignore_result=True)
def queue_monitor_run() -> dict[str, Any]:
    """AQ's queue monitor, run by beat: the queue tables' owner instances (failover and
    failback); the timers (delays, expirations, lease expiry, retention, spilling), each queue
    table's on its owner instance: here for the tables this instance owns (or that no live
    worker of their owner would serve), and a :func:`queue_monitor_timers` task on each other
    owner's copy of this queue for theirs; then a VACUUM of the storage that needs it (outside
    the pass's transaction). Safe to run on two workers at once (every step claims rows with
    SKIP LOCKED; the owner refresh takes an advisory lock; VACUUM skips a table another VACUUM
    holds)."""
    from instances.selectors import instance_queue
    from queues.selectors import monitor_places
    from queues.services import queue_storage_vacuum, queue_table_owners_refresh

    # Ownership follows the instances' heartbeats (failover and failback), once per pass.
    moves = len(queue_table_owners_refresh())
    queue = current_app.conf.task_default_queue
    here, elsewhere = monitor_places(settings.AQ_INSTANCE_NAME, queue)
    report = _timers(settings.AQ_INSTANCE_NAME, here)
    for instance in elsewhere:
        # Expires: a pass its instance did not take in time is replaced by the next one.
        queue_monitor_timers.apply_async(
            (instance,),
            queue=instance_queue(instance, queue),
            expires=max(5.0, 3 * settings.AQ_MONITOR_INTERVAL_S),
        )
    report["owner_moves"] = moves
    report["sent_to"] = sorted(elsewhere)
    report["vacuumed"] = [b.table for b in queue_storage_vacuum()]
    return report


@shared_task(name="queues.tasks.queue_monitor_timers", ignore_result=True)
def queue_monitor_timers(instance: str) -> dict[str, Any]:
    """The timers of the queue tables ``instance`` owns, on a worker of that instance. A task
    that reaches another instance's worker, or arrives after ownership moved, does nothing for
    the tables this instance no longer owns (their new owner runs them)."""
    from queues.selectors import owned_queue_table_ids

    if instance.lower() != settings.AQ_INSTANCE_NAME.lower():
        return {"skipped": f"sent to {instance}, this is {settings.AQ_INSTANCE_NAME}"}
    return _timers(instance, owned_queue_table_ids(instance))


def _timers(instance: str, tables: Sequence[int]) -> dict[str, Any]:
    from queues.services import queue_monitor_run as run

    report: dict[str, Any] = run(tables=tables).as_dict() if tables else {}
    if any(report.values()):
        # Says which instance ran which tables' timers (the ownership rule at work).
        log.info(
            "queue monitor on instance %s, %d queue tables: %s",
            instance,
            len(tables),
            " ".join(f"{k}={v}" for k, v in report.items()),
        )
    report["tables"] = len(tables)
    return report
