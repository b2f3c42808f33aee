"""A real worker reports itself in jobs.Worker; killed, the reaper marks it stopped."""

from __future__ import annotations

import signal
import time

import pytest
from django.conf import settings as django_settings

from instances.selectors import instance_queue
from jobs import services
from jobs.models import Worker
from tests.celery.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_a_worker_reports_its_queues_and_is_marked_stopped_after_it_is_killed(celery_procs):
    celery_procs.configure(AQ_WORKER_HEARTBEAT_S=0.3)
    w = celery_procs.worker("hb1", concurrency=3)
    row = w.wait_registered()
    # Its instance's own queue too (jobs/worker.py adds it), and its instance (AQ_INSTANCE_NAME).
    assert row.queues == sorted(
        [
            "celery",
            "propagation",
            *(
                instance_queue(django_settings.AQ_INSTANCE_NAME, q)
                for q in ("celery", "propagation")
            ),
        ]
    )
    assert row.instance == django_settings.AQ_INSTANCE_NAME
    assert (row.pool, row.concurrency) == ("thread", 3)
    assert row.stopped_at is None
    first_seen = row.last_seen
    # It keeps beating: last_seen moves while it lives.
    assert wait_for(lambda: Worker.objects.get(pk=row.pk).last_seen > first_seen, 5)
    assert services.propagation_reap()["workers_gone"] == 0

    w.kill(signal.SIGKILL)
    killed_at = time.monotonic()
    gone = wait_for(lambda: services.propagation_reap()["workers_gone"], 10)
    assert gone == 1
    # Silent for three heartbeats, not before.
    assert time.monotonic() - killed_at >= 2 * 0.3
    row.refresh_from_db()
    assert row.stopped_at is not None and row.stopped_at >= row.last_seen
