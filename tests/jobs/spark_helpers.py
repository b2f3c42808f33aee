"""Shared by the Spark bulk job tests: run a job's Celery task body in this process (it starts a
real ``spark-submit``; the task never starts Spark itself), and read what landed where."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from celery import current_app
from django.db import connection

from jobs import services, spark_submit
from jobs.models import SparkJob
from queues import services as qs
from queues.models import Message, Queue


@pytest.fixture
def eager_tasks():
    """Tasks sent after commit run at once in this process (the broker path has its own test
    in tests/celery): a submitted job has ended when ``spark_job_submit`` returns."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


@pytest.fixture
def small_parts(settings):
    settings.AQ_SPARK = {**settings.AQ_SPARK, "PART_SIZE": 500}


def submit(**kw: Any) -> SparkJob:
    kw.setdefault("user", None)
    kw.setdefault("master", "local[2]")
    job = services.spark_job_submit(**kw)
    job.refresh_from_db()
    return job


def run_attempt(job: SparkJob) -> str:
    """The task body for the job's current attempt, as a worker runs it."""
    return spark_submit.execute(
        job.pk, job.attempt, conninfo=qs.conninfo(), worker="test", task_id=""
    )


def in_thread(fn: Callable[[], Any]) -> threading.Thread:
    def run() -> None:
        try:
            fn()
        finally:
            connection.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def wait_for(check: Callable[[], Any], timeout: float = 120, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what or check}")


def phases_went_through(job: SparkJob) -> list[str]:
    """The phases the job's attempt entered, in the order it entered them (SparkJob.phase_at)."""
    from datetime import datetime

    return sorted(job.phase_at, key=lambda p: datetime.fromisoformat(job.phase_at[p]))


def source_ids_at(queue: Queue) -> list[int]:
    """The source message ids of the copies at ``queue`` (duplicates included)."""
    return sorted(
        Message.objects.filter(queue=queue).values_list("bulk_source_id", flat=True).iterator()
    )


def job_totals(job: SparkJob) -> dict[str, Any]:
    parts = list(job.parts.all())
    per: dict[str, int] = {}
    for p in parts:
        for k, v in p.propagated.items():
            per[k] = per.get(k, 0) + v
    return {
        "parts": len(parts),
        "read": sum(p.read for p in parts),
        "discarded": sum(p.discarded for p in parts),
        "exceptions": sum(p.exceptions for p in parts),
        "propagated": per,
    }
