"""Runs hand over cleanly under races: a busy run still gives up its slot after its slice; a new
run waits briefly for the previous one to let go of the propagation instead of sitting QUEUED
for minutes; a run stops when its schedule is replaced or its window moved away; the reaper
never calls a run that a worker has just claimed LOST; and a long failure streak still backs
off."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from jobs import runner, services
from jobs.choices import RunEnd, RunState
from jobs.models import PropagationRun, PropagationSchedule
from queues import services as qs

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


@pytest.fixture
def long_slice(settings):
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "SLICE_S": 5.0}


class Background(threading.Thread):
    """Call ``fn`` in a thread with its own Django connection (closed at the end), as a worker."""

    def __init__(self, fn: Callable[[], Any]):
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            connection.close()


def _execute_in_background(run_id: int) -> Background:
    connection.close()  # the runner uses its own sessions
    t = Background(lambda: runner.execute(run_id, conninfo=qs.conninfo(), worker="bg", pid=1))
    t.start()
    _until(lambda: PropagationRun.objects.get(pk=run_id).state == RunState.RUNNING)
    return t


def _until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_a_busy_run_gives_up_its_slot_after_its_slice(prop, settings):
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "BATCH": 1, "SLICE_S": 0.05}
    enqueue(prop.source_queue, [{"n": i} for i in range(400)])
    (out,) = run_now(prop)
    # It ended because its slice was used, with messages left: it did not drain the source
    # before letting other propagations have the thread.
    assert out == "SUCCEEDED: slice"
    run = PropagationRun.objects.get(propagation=prop)
    assert (run.state, run.end_reason) == (RunState.SUCCEEDED, RunEnd.SLICE)
    assert 0 < len(payloads_at(prop.destination_queue)) < 400
    assert run.batches == run.propagated == len(payloads_at(prop.destination_queue))  # BATCH 1
    assert len(payloads_at(prop.destination_queue)) + len(payloads_at(prop.source_queue)) == 400


def test_a_new_run_waits_for_the_previous_run_to_let_go_of_the_propagation(prop):
    (run_id,) = services.propagation_dispatch(send=False)
    previous = psycopg.connect(qs.conninfo(), autocommit=True)
    previous.execute("SELECT pg_advisory_lock(%s, %s)", (runner.LOCK_NS, prop.pk))
    threading.Timer(0.3, previous.close).start()  # it ends a moment later
    connection.close()
    out = runner.execute(run_id, conninfo=qs.conninfo(), worker="w")
    assert out.startswith("SUCCEEDED"), out
    assert PropagationRun.objects.get(pk=run_id).state == RunState.SUCCEEDED


def test_the_reaper_does_not_call_a_run_lost_that_its_worker_just_claimed(prop, settings):
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "QUEUED_TIMEOUT_S": 0}
    (run_id,) = services.propagation_dispatch(send=False)
    worker = psycopg.connect(qs.conninfo())
    watcher = psycopg.connect(qs.conninfo(), autocommit=True)
    try:
        worker.execute("SELECT pg_advisory_lock(%s, %s)", (runner.LOCK_NS, prop.pk))
        # The worker's claim is in flight (not committed) when the reaper looks at QUEUED runs.
        worker.execute(
            "UPDATE jobs_propagationrun SET state = 'RUNNING', started_at = now(), "
            "heartbeat_at = now(), session_id = pg_backend_pid() WHERE id = %s",
            (run_id,),
        )
        connection.close()
        reaper = Background(services.propagation_reap)
        reaper.start()
        _until(
            lambda: (
                watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()"
                ).fetchone()[0]
                > 0
            )
        )
        worker.commit()
        reaper.join(10)
        assert reaper.error is None, reaper.error
        run = PropagationRun.objects.get(pk=run_id)
        assert run.state == RunState.RUNNING and run.error == ""
        assert PropagationSchedule.objects.get(propagation=prop).run_id == run_id
    finally:
        worker.close()
        watcher.close()


def test_a_run_of_a_rescheduled_propagation_gives_way_to_the_new_schedule_run(
    prop, admin_user, settings
):
    # Slice and latency longer than the new run's wait for the lock (runner.LOCK_WAIT_S): only
    # the old run noticing that its schedule is gone lets the new one start.
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "SLICE_S": 20.0}
    (old,) = services.propagation_dispatch(send=False)
    bg = _execute_in_background(old)
    services.schedule_delete(user=admin_user, propagation=prop)
    services.schedule_create(user=admin_user, propagation=prop, latency=30)
    (new,) = services.propagation_dispatch(send=False)
    connection.close()
    out = runner.execute(new, conninfo=qs.conninfo(), worker="w2")
    bg.join(10)
    assert out.startswith("SUCCEEDED"), out
    assert PropagationRun.objects.get(pk=old).end_reason == RunEnd.DROPPED
    assert PropagationSchedule.objects.get(propagation=prop).run_id is None


def test_a_run_ends_when_an_alter_moves_its_window_into_the_future(prop, admin_user, settings):
    # A slice far longer than the wait below: only noticing the alter can end the run in time,
    # and it ends for the window, not the slice.
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "SLICE_S": 120.0}
    (run_id,) = services.propagation_dispatch(send=False)
    bg = _execute_in_background(run_id)
    services.schedule_update(
        user=admin_user,
        propagation=prop,
        start_time=timezone.now() + timezone.timedelta(hours=1),
        duration=60,
    )
    bg.join(30)
    assert not bg.is_alive(), "the run did not notice that its window moved"
    assert bg.error is None, bg.error
    assert bg.result == "SUCCEEDED: window_end", bg.result
    assert PropagationRun.objects.get(pk=run_id).end_reason == RunEnd.WINDOW_END


def test_a_failure_streak_past_a_thousand_still_backs_off(admin_user, mc_table, make_queue):
    src = make_queue("SRC", mc_table)
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=make_queue("NOBODY", mc_table),
    )
    enqueue(src, [{"n": 1}])
    PropagationSchedule.objects.filter(propagation=p).update(failures=1100, max_failures=5000)
    (out,) = run_now(p)
    assert out.startswith("FAILED"), out
    s = PropagationSchedule.objects.get(propagation=p)
    assert s.failures == 1101 and s.enabled and s.run_id is None
    assert s.next_run_at <= timezone.now() + timezone.timedelta(seconds=1)  # BACKOFF_MAX_S 0.05


def test_stopping_dequeue_on_the_source_stops_a_running_propagation(
    admin_user, mc_table, make_queue, long_slice
):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", mc_table)
    # A destination subscriber with a rule: the batch takes the message-by-message path.
    qs.subscriber_add(user=admin_user, queue=dst, name="ALL", rule=":msg.n >= 0")
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst
    )
    (run_id,) = services.propagation_dispatch(send=False)
    bg = _execute_in_background(run_id)
    qs.queue_stop(user=admin_user, queue=src, enqueue=False, dequeue=True)
    time.sleep(0.5)  # several heartbeats: the run has looked at its topology since
    enqueue(src, [{"n": 1}])
    bg.join(10)
    assert payloads_at(dst) == []
    assert bg.result is not None and bg.result.startswith("FAILED"), bg.result
    assert "Dequeue is disabled" in PropagationRun.objects.get(pk=run_id).error
    assert PropagationSchedule.objects.get(propagation=p).failures == 1


def test_a_batch_retried_after_a_deadlock_counts_its_messages_once(prop, long_slice):
    (run_id,) = services.propagation_dispatch(send=False)
    bg = _execute_in_background(run_id)
    other = psycopg.connect(qs.conninfo())
    watcher = psycopg.connect(qs.conninfo(), autocommit=True)

    def waiting() -> int:
        return watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        ).fetchone()[0]

    try:
        # The first batch of a run clears the schedule's failures, so it writes the schedule
        # row. Another session holds that row; the batch takes the message and waits for the
        # row; the other session then waits for the message: a deadlock, and the batch (waiting
        # longest) is the one PostgreSQL cancels and the run retries.
        PropagationSchedule.objects.filter(propagation=prop).update(failures=1)
        other.execute(
            "SELECT 1 FROM jobs_propagationschedule WHERE propagation_id = %s FOR UPDATE",
            (prop.pk,),
        )
        enqueue(prop.source_queue, [{"n": 1}])
        _until(lambda: waiting() > 0)
        other.execute(
            "SELECT 1 FROM aq_message_consumer WHERE subscriber_id = %s FOR UPDATE",
            (prop.subscriber_id,),
        )
        other.commit()
        _until(lambda: payloads_at(prop.destination_queue) == [{"n": 1}])
        time.sleep(0.3)  # a few heartbeats: the counters are written
        run = PropagationRun.objects.get(pk=run_id)
        assert (run.messages, run.propagated, run.batches) == (1, 1, 1)
    finally:
        other.close()
        watcher.close()
        services.schedule_disable(user=None, propagation=prop)
        bg.join(10)
