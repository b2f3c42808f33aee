"""The queue monitor runs as a Celery task through the configured broker (Redis in CI)."""

from __future__ import annotations

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings

from console.celery import app
from queues import engine, services
from queues.models import Message
from queues.tasks import queue_monitor_run

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker():
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("set CELERY_BROKER_URL to a real broker (the test script uses Redis)")
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10) as w:
        yield w


def _wait_for(predicate, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_monitor_task_through_the_broker_makes_a_delayed_message_ready(worker, queue):
    (mid,) = services.message_enqueue(
        user=None, queue=queue, messages=[engine.NewMessage(payload={"n": 1}, delay=0.3)]
    )
    assert Message.objects.get(pk=mid).state == "WAITING"
    time.sleep(0.4)
    queue_monitor_run.delay()
    assert _wait_for(lambda: Message.objects.get(pk=mid).state == "READY")


def test_monitor_task_through_the_broker_moves_an_expired_message_to_the_exception_queue(
    worker, queue
):
    (mid,) = services.message_enqueue(
        user=None, queue=queue, messages=[engine.NewMessage(payload={"n": 2}, expiration=0.2)]
    )
    time.sleep(0.3)
    queue_monitor_run.delay()
    assert _wait_for(lambda: Message.objects.get(pk=mid).state == "EXPIRED")
    moved = Message.objects.get(pk=mid)
    assert moved.queue_id == queue.exception_queue_id
    assert moved.original_queue_id == queue.pk
    assert moved.exception_reason == "EXPIRED"


def test_beat_schedules_the_queue_monitor():
    entry = settings.CELERY_BEAT_SCHEDULE["aq-queue-monitor"]
    assert entry["task"] == queue_monitor_run.name
    assert entry["schedule"] <= 5
