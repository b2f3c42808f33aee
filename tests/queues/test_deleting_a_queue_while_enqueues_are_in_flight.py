"""The message table has no foreign key to its queue (migration 0011): deleting a queue or a queue
table locks the queue table's storage instead, so an enqueue in flight is either counted (the
delete is refused) or finds the queue gone, and never leaves a message pointing at no queue."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections

from core.exceptions import Conflict
from queues import engine, services
from queues.models import Message, Queue, QueueTable
from tests.queues.helpers import LIVE, info, make_queue, msg, raw


def _waiting_on_lock(conn_pid: int, *, timeout: float = 10) -> None:
    """Wait until the session ``conn_pid`` waits for a lock."""
    with raw() as watcher:
        watcher.autocommit = True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if watcher.execute(
                "SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", (conn_pid,)
            ).fetchone():
                return
            time.sleep(0.02)
    raise AssertionError(f"session {conn_pid} never waited for a lock")


def _orphans() -> int:
    with raw() as conn:
        return conn.execute(
            "SELECT count(*) FROM aq_message m "
            "WHERE NOT EXISTS (SELECT 1 FROM queues_queue q WHERE q.id = m.queue_id)"
        ).fetchone()[0]


def _in_thread(fn: Any) -> Any:
    def inner() -> Any:
        try:
            return fn()
        finally:
            connections.close_all()

    return ThreadPoolExecutor(max_workers=1).submit(inner)


def _django_pid(holder: dict[str, int]) -> None:
    from django.db import connection

    connection.ensure_connection()
    holder["pid"] = connection.connection.info.backend_pid


@LIVE
@pytest.mark.parametrize("what", ["queue", "queue_table"])
def test_a_delete_waits_for_an_enqueue_in_flight_and_is_refused(admin_user, what):
    q = make_queue(admin_user, f"Q_FLIGHT_{what.upper()}")
    with raw() as enqueuer:
        [mid] = engine.enqueue(enqueuer, info(enqueuer, q), [msg({"n": 1})])  # not committed
        pid: dict[str, int] = {}

        def delete() -> None:
            _django_pid(pid)
            if what == "queue":
                services.queue_delete(user=admin_user, queue=q)
            else:
                services.queue_table_delete(user=admin_user, queue_table=q.queue_table)

        future = _in_thread(delete)
        deadline = time.monotonic() + 10
        while "pid" not in pid and time.monotonic() < deadline:
            time.sleep(0.01)
        _waiting_on_lock(pid["pid"])  # the delete waits for the enqueue to end
        enqueuer.commit()
        with pytest.raises(Conflict, match="purge"):
            future.result(timeout=30)
    assert Queue.objects.filter(pk=q.pk).exists()
    assert QueueTable.objects.filter(pk=q.queue_table_id).exists()
    assert list(Message.objects.filter(queue=q).values_list("id", flat=True)) == [mid]
    assert _orphans() == 0


@LIVE
def test_an_enqueue_behind_a_queue_delete_finds_the_queue_gone(admin_user):
    q = make_queue(admin_user, "Q_GONE")
    with raw() as enqueuer, raw() as deleter:
        qi = info(enqueuer, q)  # read before the delete, as a client does
        enqueuer.commit()
        # A queue delete in flight: storage locked, queue row deleted, not committed yet.
        engine.lock_storage(deleter, q.queue_table_id)
        deleter.execute("DELETE FROM queues_queue WHERE id = %s", (q.pk,))

        def enqueue() -> list[int]:
            try:
                return engine.enqueue(enqueuer, qi, [msg({"n": 1})])
            finally:
                enqueuer.rollback()

        future = _in_thread(enqueue)
        _waiting_on_lock(enqueuer.info.backend_pid)  # the enqueue waits for the delete
        deleter.commit()
        with pytest.raises(engine.QueueNotFound):
            future.result(timeout=30)
    assert _orphans() == 0


@LIVE
def test_a_transfer_behind_a_queue_delete_is_refused(admin_user):
    """Writers that check the queue in one statement and write in another (transfers, bulk jobs)
    hold the storage first."""
    src = make_queue(admin_user, "Q_TSRC", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=src, name="S1")
    dest = make_queue(admin_user, "Q_TDEST")
    services.message_enqueue(user=admin_user, queue=src, messages=[msg({"n": 1})])
    with raw() as mover, raw() as deleter:
        s_info, d_info = info(mover, src), info(mover, dest)
        sub = engine.subscriber_id(mover, s_info, "S1")
        mover.commit()
        engine.lock_storage(deleter, dest.queue_table_id)
        deleter.execute("DELETE FROM queues_queue WHERE id = %s", (dest.pk,))

        def move() -> Any:
            try:
                return engine.transfer(mover, s_info, sub, d_info, batch=10)
            finally:
                mover.rollback()

        future = _in_thread(move)
        _waiting_on_lock(mover.info.backend_pid)
        deleter.commit()
        with pytest.raises(engine.QueueDisabled):
            future.result(timeout=30)
    assert _orphans() == 0
    assert Message.objects.filter(queue=src).count() == 1
