"""Two real Celery workers under two AQ_INSTANCE_NAMEs make two instances UP; the one whose
worker is killed goes DOWN once the heartbeat limit has passed, the other stays UP, and the queue
monitor's pass moves the queue table it owned to its secondary."""

from __future__ import annotations

import signal

import pytest
from django.db import connection

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
    assert wait_for(lambda: _status().get("node2") == "DOWN", 10), _status()
    # DOWN only once its lease ran out: its last beat is at least the limit old on the database's
    # clock (a SIGKILL is no clean stop, which would end the lease at once). Measured from the
    # last beat, not the kill: on a busy machine a beat can be late, so the lease ends sooner
    # after the kill than the limit.
    with connection.cursor() as cur:
        cur.execute(
            "SELECT extract(epoch FROM now() - last_heartbeat) FROM aq_instance WHERE name = %s",
            ["node2"],
        )
        (since_last_beat,) = cur.fetchone()
    assert float(since_last_beat) >= LIMIT_S - 0.05
    assert _status() == {"node1": "UP", "node2": "DOWN"}
    # The queue monitor's pass (beat's entry, run here as beat would) fails it over.
    assert queue_monitor_run()["owner_moves"] == 1
    qt.refresh_from_db()
    assert qt.owner_instance_id == rows["node1"].inst_id
    move = QueueTableOwnerMove.objects.filter(queue_table=qt).latest("id")
    assert (move.from_instance_id, move.reason) == (rows["node2"].inst_id, "primary instance down")
