"""Celery tasks of the queues app: thin, take ids only, idempotent."""

from typing import Any

from celery import shared_task


@shared_task(name="queues.tasks.queue_monitor_run", ignore_result=True)
def queue_monitor_run() -> dict[str, Any]:
    """AQ's queue monitor, run by beat: delays, expirations, lease expiry, retention, the queue
    tables' owner instances (failover and failback), then a VACUUM of the queue tables' storage
    that needs it (outside the pass's transaction). Safe to run on two workers at once (every
    step claims rows with SKIP LOCKED; the owner refresh takes an advisory lock; VACUUM skips a
    table another VACUUM holds)."""
    from queues.services import queue_monitor_run as run
    from queues.services import queue_storage_vacuum, queue_table_owners_refresh

    report: dict[str, Any] = run().as_dict()
    # Ownership follows the instances' heartbeats (failover and failback), once per pass.
    report["owner_moves"] = len(queue_table_owners_refresh())
    report["vacuumed"] = [b.table for b in queue_storage_vacuum()]
    return report
