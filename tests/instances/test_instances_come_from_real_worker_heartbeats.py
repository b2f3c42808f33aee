"""Two real Celery workers under two AQ_INSTANCE_NAMEs make two instances UP; the one whose
worker is killed goes DOWN once the heartbeat limit has passed, the other stays UP, and the queue
monitor's pass moves the queue table it owned to its secondary."""

from __future__ import annotations

import signal
import time

import pytest

from instances.selectors import instance_list
from queues import services as qs
from queues.models import QueueTableOwnerMove
from queues.tasks import queue_monitor_run
from tests.celery.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

LIMIT_S = 2.5  # short for the test, still eight heartbeats on a busy machine


def _status() -> dict[str, str]:
    return dict(instance_list().values_list("name", "status"))


def test_two_instances_are_up_and_a_killed_one_goes_down_after_the_limit(celery_procs, admin_user):
    celery_procs.configure(AQ_WORKER_HEARTBEAT_S=0.3)
    limit = {"AQ_INSTANCE_HEARTBEAT_LIMIT_S": str(LIMIT_S)}
    w1 = celery_procs.worker("inst1", concurrency=1, env={"AQ_INSTANCE_NAME": "node1", **limit})
    w2 = celery_procs.worker("inst2", concurrency=1, env={"AQ_INSTANCE_NAME": "node2", **limit})
    w1.wait_registered()
    w2.wait_registered()
    both_up = {"node1": "UP", "node2": "UP"}
    assert wait_for(lambda: _status() == both_up, 10), _status()
    rows = {i.name: i for i in instance_list()}
    assert rows["node1"].inst_id != rows["node2"].inst_id
    assert list(rows["node2"].workers) == [w2.hostname]
    qt = qs.queue_table_create(
        user=admin_user, name="QT_N2", primary_instance="node2", secondary_instance="node1"
    )
    assert qt.owner_instance_id == rows["node2"].inst_id

    w2.kill(signal.SIGKILL)
    killed_at = time.monotonic()
    assert wait_for(lambda: _status().get("node2") == "DOWN", 10), _status()
    # DOWN only once no worker of it beat within the limit (its last beat was at most one
    # heartbeat interval before the kill).
    assert time.monotonic() - killed_at >= LIMIT_S - 0.3 - 0.1
    assert _status() == {"node1": "UP", "node2": "DOWN"}
    # The queue monitor's pass (beat's entry, run here as beat would) fails it over.
    assert queue_monitor_run()["owner_moves"] == 1
    qt.refresh_from_db()
    assert qt.owner_instance_id == rows["node1"].inst_id
    move = QueueTableOwnerMove.objects.filter(queue_table=qt).latest("id")
    assert (move.from_instance_id, move.reason) == (rows["node2"].inst_id, "primary instance down")
