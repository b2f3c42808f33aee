"""A Spark bulk job through the broker: a real Celery worker consuming the ``spark`` queue takes
the task, spark-submits the application and follows it to SUCCEEDED. When that worker is killed
mid-job, the driver notices its submitter is gone and stops, the reaper fails the job, and a
re-run on another worker finishes it with nothing lost or duplicated."""

from __future__ import annotations

import os
import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.models import SparkJob, SparkJobPart
from queues.models import Message
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.spark]


def _state(job: SparkJob) -> str:
    return SparkJob.objects.values_list("state", flat=True).get(pk=job.pk)


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_worker_runs_the_job(celery_procs, sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(300)])
    worker = celery_procs.worker("spark1", concurrency=2, spark=True)
    worker.wait_registered()

    job = services.spark_job_submit(
        user=None, source_queue=src, destinations=[dst], mode="MOVE", master="local[2]"
    )
    assert wait_for(lambda: _state(job) in ("SUCCEEDED", "FAILED"), timeout=180)
    job.refresh_from_db()
    assert job.state == "SUCCEEDED", job.error
    assert job.worker == worker.hostname and job.app_id.startswith("local-")
    got = sorted(Message.objects.filter(queue=dst).values_list("bulk_source_id", flat=True))
    assert got == sorted(ids)


def test_a_killed_worker_leaves_no_driver_and_a_rerun_finishes(
    celery_procs, settings, sc_table, make_queue
):
    # Parts of 500: the kill lands between commits of a job of 20 parts.
    settings.AQ_SPARK = {**settings.AQ_SPARK, "PART_SIZE": 500}
    celery_procs.env["AQ_SPARK_PART_SIZE"] = "500"
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(10_000)])
    first = celery_procs.worker("spark1", concurrency=2, spark=True)
    first.wait_registered()
    job = services.spark_job_submit(
        user=None, source_queue=src, destinations=[dst], mode="MOVE", master="local[2]"
    )
    assert wait_for(lambda: SparkJobPart.objects.filter(job=job).count() >= 2, 180)
    # Parts of this attempt are committed: its following task says it is writing.
    assert wait_for(lambda: SparkJob.objects.get(pk=job.pk).phase == "WRITING", 30)
    job.refresh_from_db()
    driver = job.pid
    first.kill(signal.SIGKILL)

    # The driver watches its submitter: it stops by itself, committed parts stay whole.
    assert wait_for(lambda: not _alive(driver), timeout=60)
    assert services.spark_job_reap(now=timezone.now() + timedelta(hours=1)) == 1
    job.refresh_from_db()
    assert job.state == "FAILED" and first.hostname in job.error
    assert job.phase == "FAILED"
    moved = sorted(Message.objects.filter(queue=dst).values_list("bulk_source_id", flat=True))
    left = set(Message.objects.filter(queue=src).values_list("id", flat=True))
    assert moved == sorted(set(ids) - left) and len(moved) < len(ids)

    second = celery_procs.worker("spark2", concurrency=2, spark=True)
    second.wait_registered()
    services.spark_job_rerun(user=None, job=job)
    assert wait_for(lambda: _state(job) in ("SUCCEEDED", "FAILED"), timeout=180)
    job.refresh_from_db()
    assert job.state == "SUCCEEDED", job.error
    assert job.phase == "SUCCEEDED" and {"QUEUED", "STARTING", "READING"} <= set(job.phase_at)
    assert job.worker == second.hostname
    got = sorted(Message.objects.filter(queue=dst).values_list("bulk_source_id", flat=True))
    assert got == sorted(ids)
    assert not Message.objects.filter(queue=src).exists()
