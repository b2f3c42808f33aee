"""A worker that stops taking messages from a broker that is up starts again by itself (the
consumer watchdog, jobs/watchdog.py); a healthy one never does. The consumer is stopped for real,
with Celery's own remote control (cancel_consumer), as kombu's Redis transport leaves it after
some broker restarts: connected, beating, taking nothing."""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from console.celery import app
from instances.selectors import instance_queue
from jobs.models import Worker
from tests.celery.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

STALL_S = 2.0


def test_a_stuck_consumer_restarts_its_worker_in_place_and_a_healthy_one_is_left_alone(
    celery_procs,
):
    celery_procs.configure(AQ_WORKER_HEARTBEAT_S=0.3, AQ_WORKER_STALL_S=STALL_S)
    w = celery_procs.worker_on("wd1", "celery", concurrency=2)
    first = w.wait_registered()
    # Its direct queue (the probes') is not listed as work; its instance's queue is.
    assert first.queues == sorted(["celery", instance_queue(settings.AQ_INSTANCE_NAME, "celery")])

    # Healthy: probes are answered, so it runs on well past the stall limit.
    time.sleep(STALL_S * 2)
    assert Worker.objects.get(pk=first.pk).started_at == first.started_at
    assert "consumer is stuck" not in w.log()

    for queue in ("celery", f"{w.hostname}.dq2"):
        replies = app.control.cancel_consumer(queue, destination=[w.hostname], reply=True)
        assert replies, f"no reply to cancel_consumer({queue})"

    restarted = wait_for(
        lambda: Worker.objects.filter(pk=first.pk, started_at__gt=first.started_at).first(),
        STALL_S * 4 + 10,
        interval=0.1,
    )
    assert restarted is not None, w.log()[-3000:]
    assert restarted.pid == w.pid  # executed again in place: no supervisor needed
    assert w.alive()
    assert "consumer is stuck; the worker process starts again" in w.log()

    # Consuming again: its queues are back.
    def consumes() -> bool:
        reply = app.control.inspect(destination=[w.hostname], timeout=1).active_queues() or {}
        names = {q["name"] for q in reply.get(w.hostname, [])}
        return {"celery", f"{w.hostname}.dq2"} <= names

    assert wait_for(consumes, 15, interval=0.3), w.log()[-3000:]


def test_a_worker_embedded_in_another_program_never_executes_that_program_again():
    """The tests' own in-process worker (celery.contrib.testing's start_worker) has the watchdog
    too: once, after that worker stopped, its probes went unanswered and the watchdog executed
    pytest again from the start in the middle of a run. Only a `celery worker` process may
    start again; here the watchdog says so and leaves the program running."""
    import threading
    from types import SimpleNamespace

    from celery.contrib.testing.worker import start_worker

    from jobs.watchdog import ConsumerWatchdog

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        assert any(t.name == "aq-heartbeat" for t in threading.enumerate())
    # Its heartbeat thread (and watchdog) ends with it.
    assert wait_for(lambda: not any(t.name == "aq-heartbeat" for t in threading.enumerate()), 10)

    dog = ConsumerWatchdog(
        SimpleNamespace(hostname="embedded@test", app=app, concurrency=1, pool=None), stall_s=0
    )
    dog.pending = [0.0, 0.0, 0.0]
    dog.restart()  # would be os.execv of pytest itself
    assert dog.pending == []
