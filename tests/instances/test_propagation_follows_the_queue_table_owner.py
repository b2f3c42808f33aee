"""Three instances on loopback (three real Celery workers, AQ_INSTANCE_NAME node1/node2/node3)
and a queue table with primary node1 and secondary node2: a propagation out of one of its queues
runs only on the owner's worker; SIGKILL of node1's worker while messages flow moves ownership to
node2 within the heartbeat limit (+10 s) and the propagation resumes there with no message lost
or moved twice; node1 back takes ownership back; node1 and node2 down hands it to node3.

Failover time (printed): SIGKILL of the owner's worker → first batch committed by the new
owner's run. Run with ``-s`` to see it."""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter

import pytest
from django.db import connection

from jobs import services
from jobs.choices import RunEnd, RunState
from jobs.models import PropagationRun, Worker
from queues import services as qs
from queues.models import Message, QueueTable
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

LIMIT_S = 5.0  # the instances' heartbeat limit: a killed one is DOWN after it
BOUND_S = LIMIT_S + 10  # the failover bound


def _ids_at(queue) -> Counter:
    """How many times each payload id reached ``queue``."""
    with connection.cursor() as cur:
        cur.execute("SELECT payload->>'id' FROM aq_message WHERE queue_id = %s", [queue.pk])
        return Counter(int(r[0]) for r in cur.fetchall())


def _moved(src, dst, total: int) -> bool:
    return (
        sum(_ids_at(dst).values()) >= total
        and not Message.objects.filter(queue=src, state__in=["READY", "WAITING"]).exists()
    )


def _owner(qt: QueueTable) -> str | None:
    qt.refresh_from_db(fields=["owner_instance"])
    return qt.owner_instance.name if qt.owner_instance_id else None


def test_a_propagation_runs_on_its_queue_tables_owner_and_fails_over(
    celery_procs, admin_user, sc_table, make_queue, settings
):
    # Small batches: the window is many transactions, so the kill lands inside it.
    celery_procs.configure(AQ_WORKER_HEARTBEAT_S=0.3, AQ_PROPAGATION_BATCH=20)
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "RESEND_S": 1}
    queue = settings.AQ_PROPAGATION["QUEUE"]

    def node(proc: str, name: str):
        env = {"AQ_INSTANCE_NAME": name, "AQ_INSTANCE_HEARTBEAT_LIMIT_S": str(LIMIT_S)}
        return celery_procs.worker_on(proc, queue, concurrency=2, env=env)

    w1, w2, w3 = node("n1", "node1"), node("n2", "node2"), node("n3", "node3")
    for w, name in ((w1, "node1"), (w2, "node2"), (w3, "node3")):
        row = w.wait_registered()
        # Each worker records its instance and consumes its instance's own queue.
        assert row.instance == name
        assert f"aq.inst.{name}.{queue}" in row.queues and queue in row.queues, row.queues
    qt = qs.queue_table_create(
        user=admin_user,
        name="QT_RING",
        multiple_consumers=True,
        sort_order="enq_time",
        primary_instance="node1",
        secondary_instance="node2",
    )
    assert _owner(qt) == "node1"
    src, dst = make_queue("RING_SRC", qt), make_queue("RING_DST", sc_table)
    prop = services.propagation_create(
        user=admin_user, name="RING", source_queue=src, destination_queue=dst
    )
    qs_prop = PropagationRun.objects.filter(propagation=prop)
    total = 0

    def add(n: int) -> None:
        nonlocal total
        for start in range(total, total + n, 500):
            enqueue(src, [{"id": i} for i in range(start, min(start + 500, total + n))])
        total += n

    # (a) The owner's worker runs every window.
    add(300)
    assert wait_for(lambda: _moved(src, dst, total), 30, interval=0.1, drive=True), (
        f"{sum(_ids_at(dst).values())} of {total} moved; log:\n{w1.log()[-3000:]}"
    )
    assert _ids_at(dst) == Counter(range(total))
    assert {r.worker for r in qs_prop if r.worker} == {w1.hostname}
    assert {r.instance for r in qs_prop} == {"node1"}

    # (b) SIGKILL node1's worker while messages flow: node2 takes over.
    at_start = sum(_ids_at(dst).values())
    add(3000)
    services.propagation_dispatch()
    wait_for(lambda: sum(_ids_at(dst).values()) >= at_start + 200, 30, interval=0.01, drive=True)
    killed_run = qs_prop.filter(state=RunState.RUNNING).first()
    assert killed_run is not None and killed_run.worker == w1.hostname
    w1.kill(signal.SIGKILL)
    killed_at = time.monotonic()
    assert sum(_ids_at(dst).values()) < total, "all moved before the kill: nothing to fail over"
    assert wait_for(lambda: _owner(qt) == "node2", BOUND_S, interval=0.05, drive=True), _owner(qt)
    moved_at = time.monotonic() - killed_at
    first = wait_for(
        lambda: qs_prop.filter(worker=w2.hostname, propagated__gt=0).exists(),
        BOUND_S,
        interval=0.02,
        drive=True,
    )
    failover_s = time.monotonic() - killed_at
    print(
        f"\nfailover: owner moved to node2 {moved_at:.2f} s after SIGKILL, first message moved "
        f"by node2 {failover_s:.2f} s after it (heartbeat limit {LIMIT_S} s)"
    )
    assert first, f"node2 moved nothing within {BOUND_S} s; log:\n{w2.log()[-3000:]}"
    assert failover_s <= BOUND_S
    assert wait_for(lambda: _moved(src, dst, total), 60, interval=0.1, drive=True)
    assert _ids_at(dst) == Counter(range(total)), "a message was lost or moved twice"
    killed_run.refresh_from_db()
    assert killed_run.state == RunState.FAILED
    after_kill = qs_prop.filter(pk__gt=killed_run.pk, started_at__isnull=False)
    assert {r.worker for r in after_kill} == {w2.hostname}

    # (c) node1 comes back: ownership returns to it, node2's run lets go, node1 runs again.
    w1b = node("n1b", "node1")
    w1b.wait_registered()
    assert wait_for(lambda: _owner(qt) == "node1", BOUND_S, interval=0.05, drive=True)
    # node2's run lets go at its next heartbeat; a batch it began before may still commit, so
    # the new messages come once it has ended (then only node1 may move them).
    assert wait_for(
        lambda: not qs_prop.filter(worker=w2.hostname, state=RunState.RUNNING).exists(),
        BOUND_S,
        interval=0.05,
        drive=True,
    )
    last_on_node2 = qs_prop.filter(worker=w2.hostname).order_by("-id").first()
    add(300)
    assert wait_for(lambda: _moved(src, dst, total), 30, interval=0.1, drive=True)
    assert _ids_at(dst) == Counter(range(total))
    last_on_node2.refresh_from_db()
    assert last_on_node2.state != RunState.RUNNING
    if last_on_node2.state == RunState.SUCCEEDED:
        assert last_on_node2.end_reason in (RunEnd.OWNER_MOVED, RunEnd.SLICE, RunEnd.YIELDED)
    back = qs_prop.filter(pk__gt=last_on_node2.pk, started_at__isnull=False)
    assert back and {r.worker for r in back} == {w1b.hostname}

    # (d) node1 and node2 both down: node3, the any-live-instance owner, takes over.
    w1b.kill(signal.SIGKILL)
    w2.kill(signal.SIGKILL)
    assert wait_for(lambda: _owner(qt) == "node3", BOUND_S, interval=0.05, drive=True)
    add(300)
    assert wait_for(lambda: _moved(src, dst, total), BOUND_S, interval=0.1, drive=True), (
        f"{sum(_ids_at(dst).values())} of {total}; log:\n{w3.log()[-3000:]}"
    )
    assert _ids_at(dst) == Counter(range(total))
    last = qs_prop.filter(propagated__gt=0).order_by("-id").first()
    assert last.worker == w3.hostname

    # Never two runs at once: each started after the previous one ended.
    runs = list(qs_prop.filter(started_at__isnull=False).order_by("started_at"))
    for a, b in itertools.pairwise(runs):
        assert a.ended_at is not None and a.ended_at <= b.started_at, (a.pk, b.pk)
    # And only owners ran: the instance each run's worker belongs to.
    inst = dict(Worker.objects.values_list("hostname", "instance"))
    assert {inst[r.worker] for r in runs} == {"node1", "node2", "node3"}
