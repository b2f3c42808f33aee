"""The queue monitor's timers run on the instance that owns the queue table (issue 15): two
instances on loopback (real Celery workers on the default queue, AQ_INSTANCE_NAME node1 and
node2) and a real beat; delayed messages in a queue table owned by each become READY through
its owner's worker only (each worker logs what its instance's pass did); SIGKILL of node2's
worker moves its table to node1, whose worker then runs that table's timers too."""

from __future__ import annotations

import re
import signal
from collections import Counter

import pytest

from queues import services as qs
from queues.models import Message, QueueTable
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

LIMIT_S = 5.0  # the instances' heartbeat limit: a killed one is DOWN after it
PASS = re.compile(r"queue monitor on instance (\S+), \d+ queue tables: .*?made_ready=(\d+)")


def _made_ready(log: str) -> Counter:
    """Messages each instance made READY, as the worker's log says."""
    out: Counter = Counter()
    for instance, n in PASS.findall(log):
        out[instance] += int(n)
    return out


def _owner(qt: QueueTable) -> str | None:
    qt.refresh_from_db(fields=["owner_instance"])
    return qt.owner_instance.name if qt.owner_instance_id else None


def test_each_queue_tables_timers_run_on_its_owner_and_move_with_it(
    celery_procs, admin_user
) -> None:
    celery_procs.configure(AQ_WORKER_HEARTBEAT_S=0.3)

    def node(proc: str, name: str):
        env = {"AQ_INSTANCE_NAME": name, "AQ_INSTANCE_HEARTBEAT_LIMIT_S": str(LIMIT_S)}
        return celery_procs.worker_on(proc, "celery", concurrency=2, env=env)

    w1, w2 = node("m1", "node1"), node("m2", "node2")
    for w, name in ((w1, "node1"), (w2, "node2")):
        assert f"aq.inst.{name}.celery" in w.wait_registered().queues
    qa = qs.queue_table_create(
        user=admin_user, name="QT_TIMERS_A", sort_order="enq_time", primary_instance="node1"
    )
    qb = qs.queue_table_create(
        user=admin_user, name="QT_TIMERS_B", sort_order="enq_time", primary_instance="node2"
    )
    assert (_owner(qa), _owner(qb)) == ("node1", "node2")
    a = qs.queue_create(user=admin_user, name="TIMERS_A", queue_table=qa)
    b = qs.queue_create(user=admin_user, name="TIMERS_B", queue_table=qb)
    enqueue(a, [{"i": i} for i in range(4)], delay=1)
    enqueue(b, [{"i": i} for i in range(3)], delay=1)
    assert Message.objects.filter(queue__in=[a, b], state="WAITING").count() == 7

    celery_procs.beat()
    ready = wait_for(
        lambda: Message.objects.filter(queue__in=[a, b], state="READY").count() == 7, 30
    )
    assert ready, f"node1:\n{w1.log()[-2000:]}\nnode2:\n{w2.log()[-2000:]}"
    # Each owner made its own table's messages ready, and no other instance touched them.
    assert _made_ready(w1.log()) == Counter({"node1": 4}), w1.log()[-3000:]
    assert _made_ready(w2.log()) == Counter({"node2": 3}), w2.log()[-3000:]

    # node2 dies: its table fails over to node1, whose worker now runs its timers as well.
    w2.kill(signal.SIGKILL)
    assert wait_for(lambda: _owner(qb) == "node1", LIMIT_S + 15, interval=0.1), _owner(qb)
    enqueue(b, [{"i": i} for i in range(3, 5)], delay=1)
    assert wait_for(lambda: Message.objects.filter(queue=b, state="READY").count() == 5, 30)
    assert _made_ready(w1.log()) == Counter({"node1": 6}), w1.log()[-3000:]
