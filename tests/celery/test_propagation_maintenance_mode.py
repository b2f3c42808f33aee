"""Maintenance mode lets a running window finish but starts no new run until it is off."""

from __future__ import annotations

import pytest

from jobs import selectors, services
from jobs.choices import RunEnd, RunState, ScheduleState
from jobs.models import PropagationRun
from queues.models import Message
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_maintenance_mode_lets_the_running_window_finish_and_starts_no_new_run(
    celery_procs, admin_user, mc_table, sc_table, make_queue
):
    celery_procs.configure(AQ_PROPAGATION_SLICE_S=4)
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    prop = services.propagation_create(
        user=admin_user, name="MOVE", source_queue=src, destination_queue=dst
    )

    def arrived() -> int:
        return Message.objects.filter(queue=dst).count()

    enqueue(src, [{"n": n} for n in range(10)])
    celery_procs.worker("mm1")
    assert wait_for(lambda: arrived() == 10, 30, drive=True)
    run = PropagationRun.objects.get(propagation=prop)
    assert run.state == RunState.RUNNING

    services.maintenance_set(user=None, restricted=True, reason="upgrade")
    # The running window goes on moving what arrives.
    enqueue(src, [{"n": n} for n in range(10, 15)])
    assert wait_for(lambda: arrived() == 15, 5, drive=True)
    run.refresh_from_db()
    assert run.state == RunState.RUNNING and run.propagated == 15

    # It ends with its slice; dispatch (driven all along) opens no next run.
    assert wait_for(
        lambda: PropagationRun.objects.get(pk=run.pk).state == RunState.SUCCEEDED, 10, drive=True
    )
    run.refresh_from_db()
    assert run.end_reason == RunEnd.SLICE
    enqueue(src, [{"n": n} for n in range(15, 20)])
    wait_for(lambda: False, 1.5, drive=True)
    assert PropagationRun.objects.filter(propagation=prop).count() == 1
    assert arrived() == 15
    assert selectors.propagation_get(prop.pk).state == ScheduleState.RESTRICTED

    services.maintenance_set(user=None, restricted=False)
    assert wait_for(lambda: arrived() == 20, 10, drive=True)
    runs = list(PropagationRun.objects.filter(propagation=prop).order_by("id"))
    assert len(runs) == 2 and runs[1].state == RunState.RUNNING
    assert runs[1].queued_at > runs[0].ended_at
    assert sorted(
        p["n"] for p in Message.objects.filter(queue=dst).values_list("payload", flat=True)
    ) == list(range(20))
