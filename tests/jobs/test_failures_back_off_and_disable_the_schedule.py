"""Failed windows count consecutive failures, back off exponentially, disable the schedule at the
threshold (16 by default, MGW's number), and a reset or a success starts again."""

from __future__ import annotations

import time

import pytest

from jobs import services
from jobs.choices import RunState, ScheduleState
from jobs.models import PropagationRun, PropagationSchedule
from jobs.schedule import backoff_seconds
from jobs.selectors import propagation_get
from queues import services as qs

from .helpers import enqueue, payloads_at, run_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broken(admin_user, mc_table, make_queue):
    """A propagation into a multi-consumer queue nobody subscribes to: every batch fails."""
    src = make_queue("SRC", mc_table)
    dst = make_queue("NOBODY", mc_table)
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst
    )
    enqueue(src, [{"n": i} for i in range(3)])
    return p, src, dst


def _fail_until_disabled(p, limit: int) -> list[PropagationRun]:
    for _ in range(limit + 2):
        s = PropagationSchedule.objects.get(propagation=p)
        if not s.enabled:
            break
        if s.next_run_at is not None:
            time.sleep(max(0.0, (s.next_run_at.timestamp() - time.time())) + 0.01)
        run_now(p)
    return list(PropagationRun.objects.filter(propagation=p).order_by("id"))


def test_the_default_threshold_is_sixteen_with_mgw_back_off():
    assert PropagationSchedule._meta.get_field("max_failures").default == 16
    assert [backoff_seconds(n) for n in (1, 2, 3, 10, 11, 16)] == [2, 4, 8, 1024, 1800, 1800]


def test_sixteen_consecutive_failures_disable_the_schedule(broken):
    p, src, _ = broken
    runs = _fail_until_disabled(p, 16)
    s = PropagationSchedule.objects.get(propagation=p)
    assert len(runs) == 16 and all(r.state == RunState.FAILED for r in runs)
    assert s.failures == 16 and not s.enabled
    assert "no subscribers" in s.last_error_msg.lower() and s.last_error_at is not None
    assert propagation_get(p.pk).state == ScheduleState.FAILED
    # Nothing moved and nothing was lost: the source still keeps all three for the propagation.
    assert len(payloads_at(src)) == 3


def test_back_off_grows_between_failures(broken, settings):
    p, _, _ = broken
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "BACKOFF_MIN_S": 0.2, "BACKOFF_MAX_S": 5}
    waits = []
    for _ in range(3):
        run_now(p)
        s = PropagationSchedule.objects.get(propagation=p)
        waits.append((s.next_run_at - s.last_run_at).total_seconds())
        assert propagation_get(p.pk).state == ScheduleState.BACKING_OFF
        time.sleep(waits[-1] + 0.02)
    assert waits[0] == pytest.approx(0.2, abs=0.05)
    assert waits[1] == pytest.approx(0.4, abs=0.05)
    assert waits[2] == pytest.approx(0.8, abs=0.05)


def test_a_reset_enables_at_once_and_a_success_clears_the_count(broken, admin_user):
    p, src, dst = broken
    services.schedule_update(user=admin_user, propagation=p, max_failures=3)
    _fail_until_disabled(p, 3)
    assert PropagationSchedule.objects.get(propagation=p).failures == 3
    qs.subscriber_add(user=admin_user, queue=dst, name="READER")  # the cause is fixed
    services.schedule_reset(user=admin_user, propagation=p)
    s = PropagationSchedule.objects.get(propagation=p)
    assert s.enabled and s.failures == 0
    run_now(p)
    assert len(payloads_at(dst)) == 3 and not payloads_at(src)
    s.refresh_from_db()
    assert s.failures == 0 and s.total_number == 3


def test_a_batch_that_commits_resets_the_failure_count(broken, admin_user):
    p, _, dst = broken
    run_now(p)
    assert PropagationSchedule.objects.get(propagation=p).failures == 1
    qs.subscriber_add(user=admin_user, queue=dst, name="READER")
    time.sleep(0.1)
    run_now(p)
    assert PropagationSchedule.objects.get(propagation=p).failures == 0
