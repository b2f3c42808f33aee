"""A worker SIGKILLed in the middle of a window loses no message and moves none twice: each batch
is one transaction, the reaper fails the orphaned run, and another worker takes over."""

from __future__ import annotations

import signal
from collections import Counter

import pytest
from django.db import connection

from jobs import services
from jobs.choices import RunState
from jobs.models import PropagationRun, PropagationSchedule
from queues.models import Message, MessageConsumer
from tests.celery.helpers import CeleryProcess, wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

TOTAL = 3000
# Each round kills worker A at a different depth into the window.
KILL_AFTER = (100, 900, 1700, 2500)


def _count(queue_id: int) -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM aq_message WHERE queue_id = %s", [queue_id])
        return cur.fetchone()[0]


def _pending(src) -> bool:
    """Messages the source still holds for a consumer (a consumed one stays PROCESSED until the
    queue monitor removes it)."""
    return Message.objects.filter(queue=src, state__in=["READY", "WAITING"]).exists()


def _kill_round(
    celery_procs, a: CeleryProcess, admin_user, src, dst, i: int, kill_after: int
) -> CeleryProcess:
    """Worker ``a`` (the only one alive) starts the window and is killed in it; a new worker
    finishes it and is returned, to be the next round's victim."""
    prop = services.propagation_create(
        user=admin_user, name=f"MOVE{i}", source_queue=src, destination_queue=dst
    )
    for start in range(0, TOTAL, 500):
        enqueue(src, [{"round": i, "n": n} for n in range(start, start + 500)])

    services.propagation_dispatch()
    # Kill it once some messages moved, well before all did.
    wait_for(lambda: not a.alive() or _count(dst.pk) >= kill_after, 30, interval=0.01)
    assert a.alive(), f"worker {a.name} exited; log:\n{a.log()[-3000:]}"
    a.kill(signal.SIGKILL)
    killed = PropagationRun.objects.get(propagation=prop)
    assert killed.state == RunState.RUNNING and killed.worker == a.hostname

    # The reaper sees the run's advisory lock free once PostgreSQL ends the dead session (after
    # that, no commit of worker A can still be in flight).
    assert wait_for(lambda: services.propagation_reap()["died"], 15, interval=0.1)
    at_kill = _count(dst.pk)
    assert 0 < at_kill < TOTAL, f"round {i}: {at_kill} moved before the kill"
    killed.refresh_from_db()
    assert killed.state == RunState.FAILED
    # Its counters committed with its batches: exactly what reached the destination.
    assert killed.propagated == at_kill
    assert f"Worker {a.hostname} (pid {a.pid}) died" in killed.error
    schedule = PropagationSchedule.objects.get(propagation=prop)
    assert schedule.failures == 1 and schedule.enabled
    assert killed.error in schedule.last_error_msg

    b = celery_procs.worker(f"w{i + 1}")
    done = wait_for(
        lambda: _count(dst.pk) >= TOTAL and not _pending(src), 60, interval=0.1, drive=True
    )
    assert done, f"round {i}: {_count(dst.pk)} of {TOTAL} moved; log:\n{b.log()[-3000:]}"
    # Let the new run look at the empty source once more before judging.
    live = PropagationRun.objects.filter(propagation=prop, state=RunState.RUNNING)
    assert wait_for(lambda: live.filter(waiting=True).exists(), 15, drive=True)

    got = Counter(
        p["n"] for p in Message.objects.filter(queue=dst).values_list("payload", flat=True)
    )
    assert got == Counter(range(TOTAL)), (
        f"round {i}: missing {sorted(set(range(TOTAL)) - set(got))[:10]}, "
        f"twice {[n for n, c in got.items() if c > 1][:10]}"
    )
    assert not MessageConsumer.objects.filter(subscriber=prop.subscriber).exists()
    assert Message.objects.filter(queue=src, state="PROCESSED").count() == TOTAL

    runs = PropagationRun.objects.filter(propagation=prop).exclude(pk=killed.pk)
    assert {r.worker for r in runs if r.worker} == {b.hostname}
    assert sum(r.propagated for r in runs) + killed.propagated == TOTAL
    schedule.refresh_from_db()
    assert schedule.failures == 0  # B's first committed batch reset the count

    # Quiet this propagation before the next round, where worker B is the one killed.
    services.schedule_disable(user=None, propagation=prop)
    unfinished = PropagationRun.objects.filter(
        propagation=prop, state__in=[RunState.QUEUED, RunState.RUNNING]
    )
    assert wait_for(lambda: not unfinished.exists(), 10)
    return b


def test_a_worker_killed_mid_window_loses_and_duplicates_nothing(
    celery_procs, admin_user, mc_table, sc_table, make_queue
):
    # Small batches make a window of many transactions, so the kill lands inside one.
    celery_procs.configure(AQ_PROPAGATION_BATCH=20)
    worker = celery_procs.worker("w0")
    worker.wait_registered()  # its instance up: the source queue table's owner to send to
    for i, kill_after in enumerate(KILL_AFTER):
        src, dst = make_queue(f"SRC{i}", mc_table), make_queue(f"DST{i}", sc_table)
        worker = _kill_round(celery_procs, worker, admin_user, src, dst, i, kill_after)
