"""Propagation fixtures: a multi-consumer source, destinations, rule sets, and a way to run a
window in this process (the Celery tests run the same code in real workers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jobs import runner, services
from jobs.models import Propagation, PropagationRun
from queues import engine
from queues import services as qs
from queues.models import Message, Queue


@pytest.fixture(autouse=True)
def fast_windows(settings):
    """Short slices and back-off so a run returns soon after its source goes idle."""
    settings.AQ_PROPAGATION = {
        **settings.AQ_PROPAGATION,
        "SLICE_S": 0.3,
        "HEARTBEAT_S": 0.1,
        "BACKOFF_MIN_S": 0.01,
        "BACKOFF_MAX_S": 0.05,
    }


@pytest.fixture
def mc_table(admin_user):
    return qs.queue_table_create(
        user=admin_user, name="QT_MC", sort_order="enq_time", multiple_consumers=True
    )


@pytest.fixture
def sc_table(admin_user):
    return qs.queue_table_create(user=admin_user, name="QT_SC", sort_order="enq_time")


@pytest.fixture
def make_queue(admin_user) -> Callable[..., Queue]:
    def make(name: str, table: Any) -> Queue:
        return qs.queue_create(user=admin_user, name=name, queue_table=table)

    return make


@pytest.fixture
def rule_set(admin_user) -> Callable[..., Any]:
    from rules import services as rs

    def make(name: str, *conditions: str) -> Any:
        s = rs.rule_set_create(user=admin_user, name=name)
        for i, cond in enumerate(conditions):
            r = rs.rule_create(user=admin_user, name=f"{name}_R{i}", condition=cond)
            rs.rule_set_add_rule(user=admin_user, rule_set=s, rule=r)
        return s

    return make


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
