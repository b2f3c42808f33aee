"""Schedules keep working for months and refuse NaN: a frequent cron schedule keeps opening
windows months after its start time (the dispatcher must never fail on it), consecutive cron
windows longer than the cron step do not merge, and NaN or out-of-range numbers are refused
naming the field, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.exceptions import DomainError
from jobs import schedule, services
from jobs.models import PropagationSchedule
from jobs.schedule import window_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def prop(admin_user, mc_table, sc_table, make_queue):
    return services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
        duration=10,
        next_time="* * * * *",
    )


def _age(prop, days: int) -> None:
    """The schedule was created ``days`` ago (start_time never moves; windows chain from it)."""
    PropagationSchedule.objects.filter(propagation=prop).update(
        start_time=timezone.now() - timedelta(days=days)
    )


class _CountedSteps:
    """The real parsed NEXT_TIME, counting the cron steps window_at takes."""

    def __init__(self, nt: Any) -> None:
        self.nt, self.steps = nt, 0

    def after(self, moment: datetime) -> datetime:
        self.steps += 1
        return self.nt.after(moment)


def test_a_minutely_cron_window_is_found_in_bounded_steps_a_year_after_the_start(monkeypatch):
    now = datetime(2026, 11, 22, 10, 7, 30, tzinfo=UTC)
    counted = _CountedSteps(schedule.parse_next_time("* * * * *"))
    monkeypatch.setattr(schedule, "parse_next_time", lambda text: counted)
    start, end = window_at(
        start_time=now - timedelta(days=365), duration=10, next_time="* * * * *", now=now
    )
    assert (start, end) == (
        datetime(2026, 11, 22, 10, 8, tzinfo=UTC),
        start + timedelta(seconds=10),
    )
    # Walking the chain window by window would take one step per minute of the year (525,600).
    assert 0 < counted.steps <= 1_001, counted.steps


def test_the_dispatcher_still_opens_windows_of_a_cron_schedule_started_months_ago(prop):
    _age(prop, 200)
    now = timezone.now()
    PropagationSchedule.objects.filter(propagation=prop).update(
        window_start=now - timedelta(days=1), window_end=now - timedelta(days=1), next_run_at=now
    )
    services.propagation_dispatch(send=False)  # must not raise for every schedule at once
    s = PropagationSchedule.objects.get(propagation=prop)
    assert s.window_end > now - timedelta(seconds=1)
    assert s.window_end - s.window_start == timedelta(seconds=10)


def test_altering_the_latency_of_a_cron_schedule_started_months_ago_works(prop, admin_user):
    _age(prop, 200)
    s = services.schedule_update(user=admin_user, propagation=prop, latency=5)
    assert s.latency == 5 and s.window_end > timezone.now() - timedelta(minutes=1)


def test_cron_windows_longer_than_the_cron_step_follow_the_last_window_not_the_clock(
    prop, admin_user
):
    # Windows of 90 s opened by a minutely cron: 0:00-1:30, then the first minute after 1:30,
    # 2:00-3:30. At 1:40 the next window is 2:00, not one that "opened" at 1:00.
    services.schedule_update(user=admin_user, propagation=prop, duration=90)
    _age(prop, 200)
    t = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=10)
    PropagationSchedule.objects.filter(propagation=prop).update(
        window_start=t, window_end=t + timedelta(seconds=90), next_run_at=t + timedelta(seconds=90)
    )
    assert services.propagation_dispatch(now=t + timedelta(seconds=100), send=False) == []
    s = PropagationSchedule.objects.get(propagation=prop)
    assert s.window_start == t + timedelta(minutes=2) and s.next_run_at == s.window_start


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"next_time": "nan"}, "next_time"),
        ({"next_time": "NaN"}, "next_time"),
        ({"duration": float("nan")}, "duration"),
        ({"latency": float("nan")}, "latency"),
        ({"duration": float("inf")}, "duration"),
        ({"max_failures": 2**31}, "max_failures"),
    ],
)
def test_nan_and_out_of_range_schedule_numbers_are_refused_naming_the_field(
    prop, admin_user, changes, field
):
    before = PropagationSchedule.objects.get(propagation=prop)
    with pytest.raises(DomainError) as exc:
        services.schedule_update(user=admin_user, propagation=prop, **changes)
    assert exc.value.field == field
    after = PropagationSchedule.objects.get(propagation=prop)
    assert (after.duration, after.next_time, after.latency, after.max_failures) == (
        before.duration,
        before.next_time,
        before.latency,
        before.max_failures,
    )
