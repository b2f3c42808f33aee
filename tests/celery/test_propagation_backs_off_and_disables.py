"""A destination that refuses every batch: each run fails in the worker, the schedule backs off
exponentially, disables itself at max_failures, and a reset after the fix moves everything."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

import pytest

from jobs import selectors, services
from jobs.choices import RunState, ScheduleState
from jobs.models import Propagation, PropagationRun, PropagationSchedule
from jobs.schedule import backoff_seconds
from queues import services as qs
from queues.models import Message
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


@dataclass
class Failing:
    schedule: PropagationSchedule
    runs: list[PropagationRun]
    # failures → the back-off the schedule was given then (next_run_at - last_error_at).
    backoffs: dict[int, timedelta]

    def gaps(self) -> list[float]:
        """Seconds from each failed run's end to the next run's creation: the back-off taken."""
        return [
            (b.queued_at - a.ended_at).total_seconds() for a, b in itertools.pairwise(self.runs)
        ]


def _broken_propagation(admin_user, mc_table, make_queue, **schedule) -> Propagation:
    src = make_queue("SRC", mc_table)
    # A multi-consumer destination with no subscriber: the engine refuses every enqueue.
    dst = make_queue("DST", mc_table)
    return services.propagation_create(
        user=admin_user, name="BROKEN", source_queue=src, destination_queue=dst, **schedule
    )


def _fail_until_disabled(prop: Propagation, timeout: float) -> Failing:
    """Dispatch (as beat would) until the schedule disables itself. The schedule is read just
    before each dispatch: a failure's back-off stays visible at least until this loop opens the
    next run, so each failure's back-off is seen unless this process stalls longer than it."""
    backoffs: dict[int, timedelta] = {}
    deadline = time.monotonic() + timeout
    while True:
        s = PropagationSchedule.objects.get(propagation=prop)
        if s.failures:
            backoffs[s.failures] = s.next_run_at - s.last_error_at
        if not s.enabled:
            break
        assert time.monotonic() < deadline, list(
            PropagationRun.objects.filter(propagation=prop).values("state", "error")
        )
        services.propagation_dispatch()
        time.sleep(0.02)
    # Driving on must not start another run of a disabled schedule.
    wait_for(lambda: False, 1.0, drive=True)
    runs = list(PropagationRun.objects.filter(propagation=prop).order_by("id"))
    return Failing(PropagationSchedule.objects.get(propagation=prop), runs, backoffs)


def _assert_backed_off(f: Failing, *, low: float, high: float) -> None:
    for k, seen in f.backoffs.items():
        assert seen == timedelta(seconds=backoff_seconds(k, low=low, high=high)), f.backoffs
    # Each next run was opened no sooner than the back-off allowed.
    for k, gap in enumerate(f.gaps(), start=1):
        assert gap >= backoff_seconds(k, low=low, high=high), (k, f.gaps())


def _assert_moves_after_reset(prop: Propagation, sent: list) -> None:
    dst, src = prop.destination_queue, prop.source_queue
    failed_last = PropagationRun.objects.filter(propagation=prop).latest("id").pk
    qs.subscriber_add(user=None, queue=dst, name="READER")
    s = services.schedule_reset(user=None, propagation=prop)
    assert (s.failures, s.enabled) == (0, True)
    assert wait_for(
        lambda: (
            Message.objects.filter(queue=dst).count() >= len(sent)
            and not Message.objects.filter(queue=src, state="READY").exists()
        ),
        20,
        drive=True,
    )
    got = Counter(
        p["n"] for p in Message.objects.filter(queue=dst).values_list("payload", flat=True)
    )
    assert got == Counter(p["n"] for p in sent)
    s.refresh_from_db()
    assert s.failures == 0 and s.enabled
    assert selectors.propagation_get(prop.pk).state in (ScheduleState.RUNNING, ScheduleState.IDLE)
    after = PropagationRun.objects.filter(propagation=prop, pk__gt=failed_last)
    assert not after.filter(state=RunState.FAILED).exists()
    assert sum(r.propagated for r in after) == len(sent)


def test_a_refusing_destination_backs_off_disables_after_max_failures_and_resets(
    celery_procs, admin_user, mc_table, make_queue
):
    celery_procs.configure(AQ_PROPAGATION_BACKOFF_MIN_S=0.5, AQ_PROPAGATION_BACKOFF_MAX_S=5)
    prop = _broken_propagation(admin_user, mc_table, make_queue, max_failures=4)
    sent = [{"n": n} for n in range(20)]
    enqueue(prop.source_queue, sent)
    celery_procs.worker("bo1")

    f = _fail_until_disabled(prop, 30)
    s = f.schedule
    assert (s.failures, s.enabled) == (4, False)
    assert "Queue DST has no subscribers" in s.last_error_msg
    assert [r.state for r in f.runs] == [RunState.FAILED] * 4
    assert all("NoSubscribers" in r.error and r.worker.startswith("bo1@") for r in f.runs)
    assert all(r.propagated == 0 for r in f.runs)
    # The back-off doubles: 0.5 s, 1 s, 2 s, and 4 s written with the fourth (nothing runs).
    assert f.backoffs == {k: timedelta(seconds=0.5 * 2 ** (k - 1)) for k in (1, 2, 3, 4)}
    _assert_backed_off(f, low=0.5, high=5)
    assert selectors.propagation_get(prop.pk).state == ScheduleState.FAILED

    # Nothing was lost while it failed: every message still waits at the source.
    assert Message.objects.filter(queue=prop.source_queue, state="READY").count() == len(sent)
    assert not Message.objects.filter(queue=prop.destination_queue).exists()

    _assert_moves_after_reset(prop, sent)


def test_the_default_threshold_disables_a_schedule_after_sixteen_failures(
    celery_procs, admin_user, mc_table, make_queue
):
    celery_procs.configure(AQ_PROPAGATION_BACKOFF_MIN_S=0.05, AQ_PROPAGATION_BACKOFF_MAX_S=0.4)
    prop = _broken_propagation(admin_user, mc_table, make_queue)
    assert prop.schedule.max_failures == 16
    sent = [{"n": n} for n in range(5)]
    enqueue(prop.source_queue, sent)
    celery_procs.worker("bo16")

    f = _fail_until_disabled(prop, 60)
    assert (f.schedule.failures, f.schedule.enabled) == (16, False)
    assert len(f.runs) == 16 and {r.state for r in f.runs} == {RunState.FAILED}
    # Capped at the maximum from the fourth failure on (0.05 * 2^3 = 0.4).
    assert f.backoffs[16] == timedelta(seconds=0.4)
    _assert_backed_off(f, low=0.05, high=0.4)
    assert selectors.propagation_get(prop.pk).state == ScheduleState.FAILED

    _assert_moves_after_reset(prop, sent)
