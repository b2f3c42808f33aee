"""Schedule and propagation actions: allowed ones change the state, the others say why and
change nothing."""

from __future__ import annotations

import pytest

from core.exceptions import Conflict, Forbidden
from jobs import services
from jobs.choices import ScheduleState
from jobs.models import Propagation, PropagationSchedule
from jobs.selectors import propagation_get
from queues.models import Message, Subscriber

from .helpers import enqueue, payloads_at, run_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def prop(admin_user, mc_table, sc_table, make_queue):
    return services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
    )


def _snapshot(p):
    return list(PropagationSchedule.objects.filter(propagation=p).values())


def test_a_new_propagation_has_the_default_schedule(prop):
    s = prop.schedule
    assert (s.duration, s.next_time, s.latency, s.enabled) == (None, "", 3.0, True)
    assert prop.subscriber.name == "P" and prop.subscriber.queue_id == prop.source_queue_id


def test_resetting_a_healthy_schedule_is_refused_without_change(prop, operator_user):
    before = _snapshot(prop)
    with pytest.raises(Conflict, match="no failures to reset"):
        services.schedule_reset(user=operator_user, propagation=prop)
    assert _snapshot(prop) == before


def test_enable_and_disable_refuse_the_state_they_are_already_in(prop, operator_user):
    with pytest.raises(Conflict, match="already enabled"):
        services.schedule_enable(user=operator_user, propagation=prop)
    services.schedule_disable(user=operator_user, propagation=prop)
    assert propagation_get(prop.pk).state == ScheduleState.DISABLED
    with pytest.raises(Conflict, match="already disabled"):
        services.schedule_disable(user=operator_user, propagation=prop)
    services.schedule_enable(user=operator_user, propagation=prop)
    assert propagation_get(prop.pk).state == ScheduleState.IDLE


def test_an_unscheduled_propagation_cannot_be_enabled(prop, admin_user):
    services.schedule_delete(user=admin_user, propagation=prop)
    assert propagation_get(prop.pk).state == ScheduleState.UNSCHEDULED
    with pytest.raises(Conflict, match="schedule it first"):
        services.schedule_enable(user=admin_user, propagation=prop)
    services.schedule_create(user=admin_user, propagation=prop, latency=1)
    with pytest.raises(Conflict, match="already scheduled"):
        services.schedule_create(user=admin_user, propagation=prop)


def test_a_stopped_propagation_does_not_run(prop, operator_user):
    services.propagation_stop(user=operator_user, propagation=prop)
    assert propagation_get(prop.pk).state == ScheduleState.STOPPED
    enqueue(prop.source_queue, [{"n": 1}])
    assert run_now(prop) == []
    with pytest.raises(Conflict):
        services.propagation_stop(user=operator_user, propagation=prop)
    services.propagation_start(user=operator_user, propagation=prop)
    run_now(prop)
    assert payloads_at(prop.destination_queue) == [{"n": 1}]


def test_the_operator_cannot_change_topology_and_the_monitor_cannot_act(
    prop, operator_user, monitor_user
):
    with pytest.raises(Forbidden):
        services.schedule_update(user=operator_user, propagation=prop, latency=1)
    with pytest.raises(Forbidden):
        services.propagation_delete(user=operator_user, propagation=prop)
    with pytest.raises(Forbidden):
        services.schedule_disable(user=monitor_user, propagation=prop)


def test_dropping_a_propagation_releases_the_messages_the_source_kept_for_it(
    prop, admin_user, mc_table, make_queue
):
    src = prop.source_queue
    Subscriber.objects.create(queue=src, name="LOCAL")
    (mid,) = enqueue(src, [{"n": 1}])
    assert Message.objects.get(pk=mid).pending_consumers == 2
    services.propagation_delete(user=admin_user, propagation=prop)
    assert not Propagation.objects.exists() and not Subscriber.objects.filter(name="P").exists()
    assert Message.objects.get(pk=mid).pending_consumers == 1


def test_a_window_ends_and_the_next_opens_after_next_time(prop, admin_user):
    services.schedule_update(
        user=admin_user, propagation=prop, duration=0.2, next_time="10m", latency=0.05
    )
    assert run_now(prop) == ["SUCCEEDED: window_end"]
    s = PropagationSchedule.objects.get(propagation=prop)
    assert run_now(prop) == []  # the dispatcher placed the next window
    s.refresh_from_db()
    gap = (s.window_start - s.last_run_at).total_seconds()
    assert 590 < gap < 601
    assert propagation_get(prop.pk).state == ScheduleState.WAITING


def test_a_window_in_the_future_waits(prop, admin_user):
    from datetime import timedelta

    from django.utils import timezone

    services.schedule_update(
        user=admin_user, propagation=prop, start_time=timezone.now() + timedelta(hours=1)
    )
    assert propagation_get(prop.pk).state == ScheduleState.WAITING
    assert run_now(prop) == []


def test_a_dispatched_run_no_worker_took_yet_shows_waiting_for_a_worker(prop):
    assert propagation_get(prop.pk).state == ScheduleState.IDLE
    services.propagation_dispatch(send=False)
    assert propagation_get(prop.pk).state == ScheduleState.QUEUED
