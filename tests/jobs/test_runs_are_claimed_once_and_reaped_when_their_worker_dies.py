"""A run is claimed by one conditional UPDATE under its propagation's advisory lock; the reaper
fails RUNNING runs whose session is gone, and leaves live ones alone."""

from __future__ import annotations

import psycopg
import pytest

from jobs import runner, services
from jobs.choices import RunState, ScheduleState
from jobs.models import PropagationRun, PropagationSchedule
from jobs.selectors import propagation_get
from queues import services as qs

from .helpers import enqueue, payloads_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def prop(admin_user, mc_table, sc_table, make_queue):
    return services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
    )


def _claim_like_a_worker(run_id: int, prop_id: int) -> psycopg.Connection:
    conn = psycopg.connect(qs.conninfo(), autocommit=True)
    assert conn.execute(
        "SELECT pg_try_advisory_lock(%s, %s)", (runner.LOCK_NS, prop_id)
    ).fetchone()[0]
    conn.execute(
        "UPDATE jobs_propagationrun SET state = 'RUNNING', started_at = now(), heartbeat_at = now(), "
        "worker = 'w1@host', pid = 4242, session_id = pg_backend_pid() WHERE id = %s",
        (run_id,),
    )
    return conn


def test_a_duplicated_task_does_nothing(prop):
    enqueue(prop.source_queue, [{"n": 1}])
    (run_id,) = services.propagation_dispatch(send=False)
    first = runner.execute(run_id, conninfo=qs.conninfo(), worker="a")
    again = runner.execute(run_id, conninfo=qs.conninfo(), worker="b")
    assert first.startswith("SUCCEEDED") and again == "claimed by another"
    assert payloads_at(prop.destination_queue) == [{"n": 1}]


def test_a_second_run_of_a_live_propagation_does_not_start(prop):
    (run_id,) = services.propagation_dispatch(send=False)
    holder = _claim_like_a_worker(run_id, prop.pk)
    try:
        other = PropagationRun.objects.create(propagation=prop)
        assert runner.execute(other.pk, conninfo=qs.conninfo()) == (
            "another run of this propagation is alive"
        )
        assert PropagationRun.objects.get(pk=other.pk).state == RunState.QUEUED
    finally:
        holder.close()


def test_the_reaper_fails_a_run_whose_worker_died(prop, settings):
    # Both bounds: fast_windows caps the back-off at 0.05 s, which a loaded machine outlasts
    # between the reap and the read of the state.
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "BACKOFF_MIN_S": 30, "BACKOFF_MAX_S": 60}
    (run_id,) = services.propagation_dispatch(send=False)
    holder = _claim_like_a_worker(run_id, prop.pk)
    assert services.propagation_reap()["died"] == 0  # alive: its session holds the lock
    holder.close()  # the worker dies; PostgreSQL drops its session and the lock with it
    assert services.propagation_reap()["died"] == 1
    run = PropagationRun.objects.get(pk=run_id)
    assert run.state == RunState.FAILED and "w1@host (pid 4242) died" in run.error
    s = PropagationSchedule.objects.get(propagation=prop)
    assert s.failures == 1 and s.run_id is None and "died" in s.last_error_msg
    assert propagation_get(prop.pk).state == ScheduleState.BACKING_OFF


def test_a_run_that_stops_beating_is_shown_stuck(prop, settings):
    (run_id,) = services.propagation_dispatch(send=False)
    holder = _claim_like_a_worker(run_id, prop.pk)
    try:
        holder.execute(
            "UPDATE jobs_propagationrun SET heartbeat_at = now() - interval '10 minutes' "
            "WHERE id = %s",
            (run_id,),
        )
        assert propagation_get(prop.pk).state == ScheduleState.STUCK
        assert services.propagation_reap()["died"] == 0  # stuck is shown, not killed
    finally:
        holder.close()


def test_a_task_that_never_started_is_lost_and_dispatched_again(prop, settings):
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "QUEUED_TIMEOUT_S": 0}
    (run_id,) = services.propagation_dispatch(send=False)
    assert services.propagation_reap()["lost"] == 1
    assert PropagationRun.objects.get(pk=run_id).state == RunState.LOST
    s = PropagationSchedule.objects.get(propagation=prop)
    assert s.failures == 0 and s.run_id is None
    assert len(services.propagation_dispatch(send=False)) == 1


def test_maintenance_mode_holds_new_runs_and_releases_them(prop, operator_user):
    services.maintenance_set(user=operator_user, restricted=True, reason="upgrade")
    assert services.propagation_dispatch(send=False) == []
    assert propagation_get(prop.pk).state == ScheduleState.RESTRICTED
    services.maintenance_set(user=operator_user, restricted=False)
    assert len(services.propagation_dispatch(send=False)) == 1


def test_a_running_run_finishes_its_slice_in_maintenance_mode(prop, operator_user):
    enqueue(prop.source_queue, [{"n": 1}])
    (run_id,) = services.propagation_dispatch(send=False)
    services.maintenance_set(user=operator_user, restricted=True)
    assert runner.execute(run_id, conninfo=qs.conninfo()).startswith("SUCCEEDED")
    assert payloads_at(prop.destination_queue) == [{"n": 1}]
    assert services.propagation_dispatch(send=False) == []


def test_the_reaper_deletes_old_finished_runs_only(prop):
    from datetime import timedelta

    from django.utils import timezone

    enqueue(prop.source_queue, [{"n": 1}])
    (run_id,) = services.propagation_dispatch(send=False)
    assert runner.execute(run_id, conninfo=qs.conninfo()).startswith("SUCCEEDED")
    (live,) = services.propagation_dispatch(send=False)  # the next run, QUEUED
    long_ago = timezone.now() - timedelta(days=30)
    PropagationRun.objects.filter(pk=run_id).update(ended_at=long_ago)
    assert services.propagation_reap()["runs_purged"] == 1
    assert list(PropagationRun.objects.values_list("pk", flat=True)) == [live]
    # The schedule's totals keep what the deleted run moved.
    assert PropagationSchedule.objects.get(propagation=prop).total_number == 1
