"""Shared helpers for the queue engine tests: topology set-up through the services, raw
connections for concurrency, and small readers over the message table."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from django.db import connections

from queues import engine, services
from queues.models import Message, Queue

# Data must really commit for other connections (and the commit-time trigger) to see it; the
# serialized rollback puts the role groups back after the flush, for the tests that follow.
LIVE = pytest.mark.django_db(transaction=True)


def make_queue(
    user: Any,
    name: str,
    *,
    sort_order: str = "enq_time",
    multiple_consumers: bool = False,
    secure: bool = False,
    payload_type: str = "ANY",
    payload_schema: Any = None,
    owner: Any = None,
    **queue_kw: Any,
) -> Queue:
    """A queue in a queue table of its own named QT_<name>."""
    qt = services.queue_table_create(
        user=user,
        name=f"QT_{name}",
        sort_order=sort_order,
        multiple_consumers=multiple_consumers,
        secure=secure,
        payload_type=payload_type,
        payload_schema=payload_schema,
        owner=owner,
    )
    return services.queue_create(user=user, name=name, queue_table=qt, **queue_kw)


def msg(payload: Any = None, **kw: Any) -> engine.NewMessage:
    return engine.NewMessage(payload=payload, **kw)


def put(queue: Queue | str, *payloads: Any, user: Any = None, **kw: Any) -> list[int]:
    """Enqueue one message per payload in one service call (one transaction)."""
    return services.message_enqueue(
        user=user, queue=queue, messages=[msg(p, **kw) for p in payloads]
    )


def take(queue: Queue | str, *, user: Any = None, **kw: Any) -> list[engine.DequeuedMessage]:
    return services.message_dequeue(user=user, queue=queue, request=services.DequeueRequest(**kw))


def payloads(messages: Iterable[engine.DequeuedMessage]) -> list[Any]:
    return [m.payload for m in messages]


def raw() -> psycopg.Connection:
    """A connection of its own (not Django's), for a second session."""
    return psycopg.connect(services.conninfo())


def info(conn: psycopg.Connection, queue: Queue) -> engine.QueueInfo:
    return engine.queue_info(conn, queue.pk)


def browse(conn: psycopg.Connection, queue: Queue, **kw: Any) -> list[engine.DequeuedMessage]:
    kw.setdefault("batch", 10_000)
    return engine.dequeue(conn, info(conn, queue), mode=engine.BROWSE, **kw)


def states(queue: Queue) -> dict[int, str]:
    return dict(Message.objects.filter(queue=queue).values_list("id", "state"))


def row(msgid: int) -> Message:
    return Message.objects.get(pk=msgid)


def run_threads(*fns: Callable[[], Any], timeout: float = 60) -> list[Any]:
    """Run each function in a thread of its own and return their results in order; an exception
    in any thread is raised here. Django connections opened by a thread are closed with it."""

    def wrap(fn: Callable[[], Any]) -> Callable[[], Any]:
        def inner() -> Any:
            try:
                return fn()
            finally:
                connections.close_all()

        return inner

    with ThreadPoolExecutor(max_workers=len(fns)) as pool:
        futures = [pool.submit(wrap(fn)) for fn in fns]
        return [f.result(timeout=timeout) for f in futures]


def barrier(n: int) -> threading.Barrier:
    return threading.Barrier(n, timeout=30)
