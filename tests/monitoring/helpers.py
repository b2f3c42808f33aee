"""Helpers of the monitoring suite (not fixtures): enqueue and dequeue through the services,
and controlled sample times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from queues import engine
from queues import services as qs
from queues.models import Queue

T0 = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """A sample time ``seconds`` after T0 (10:00:00, on a bucket boundary of every tier)."""
    return T0 + timedelta(seconds=seconds)


def enqueue(user, queue: Queue, n: int, **fields: object) -> None:  # type: ignore[no-untyped-def]
    msgs = [engine.NewMessage(payload={"n": i}, **fields) for i in range(n)]  # type: ignore[arg-type]
    qs.message_enqueue(user=user, queue=queue, messages=msgs)


def dequeue(user, queue: Queue, n: int) -> int:  # type: ignore[no-untyped-def]
    got = qs.message_dequeue(user=user, queue=queue, request=qs.DequeueRequest(batch=n))
    return len(got)
