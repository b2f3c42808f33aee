"""Propagation helpers: enqueue through the service, run a window in this process (the Celery
tests run the same code in real workers), and read what a queue holds."""

from __future__ import annotations

from typing import Any

from jobs import runner, services
from jobs.models import Propagation, PropagationRun
from queues import engine
from queues import services as qs
from queues.models import Message, Queue


def enqueue(queue: Queue, payloads: list[Any], **kw: Any) -> list[int]:
    return qs.message_enqueue(
        user=None, queue=queue, messages=[engine.NewMessage(payload=p, **kw) for p in payloads]
    )


def run_now(propagation: Propagation) -> list[str]:
    """Dispatch due windows and execute this propagation's run here, as a worker would."""
    from django.db import transaction

    services.propagation_dispatch(send=False)
    transaction.get_connection().close()  # the runner uses its own sessions
    out = []
    for run in PropagationRun.objects.filter(propagation=propagation, state="QUEUED"):
        out.append(runner.execute(run.pk, conninfo=qs.conninfo(), worker="test", pid=0))
    return out


def payloads_at(queue: Queue) -> list[Any]:
    return list(
        Message.objects.filter(queue=queue, state="READY")
        .order_by("id")
        .values_list("payload", flat=True)
    )
