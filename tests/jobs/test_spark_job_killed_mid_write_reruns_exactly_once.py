"""Exactly once across a kill: the driver killed in the middle of writing leaves whole parts
behind (each with its marker) and nothing half-written; a re-run of the same job writes only the
missing parts, so no destination holds a message twice and the source loses none. Cancel is the
same kill, asked for by an operator."""

from __future__ import annotations

import os
import signal

import pytest

from jobs import services
from jobs.models import SparkJob, SparkJobPart
from queues.models import Message

from .helpers import enqueue
from .spark_helpers import (
    eager_tasks,
    in_thread,
    job_totals,
    source_ids_at,
    wait_for,
)

__all__ = ["eager_tasks"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark]

N = 6_000  # 60 parts of 100: the kill lands long before the last


@pytest.fixture
def small_parts(settings) -> None:
    """Parts of 100 rows: as many parts as with 30,000 rows in parts of 500, a fifth of the rows."""
    settings.AQ_SPARK = {**settings.AQ_SPARK, "PART_SIZE": 100}


def _start(src, dests, mode: str) -> SparkJob:
    """Submit in a thread (the eager task blocks it until the driver ends); return the job once
    its first parts have committed."""
    in_thread(
        lambda: services.spark_job_submit(
            user=None, source_queue=src, destinations=dests, mode=mode, master="local[2]"
        )
    )
    job = wait_for(lambda: SparkJob.objects.filter(source_queue=src).first(), 30, "the job row")
    wait_for(lambda: SparkJobPart.objects.filter(job=job).count() >= 3, 180, "3 parts written")
    job.refresh_from_db()
    return job


def _ended(job: SparkJob) -> SparkJob:
    return wait_for(
        lambda: SparkJob.objects.filter(
            pk=job.pk, state__in=["FAILED", "CANCELLED", "SUCCEEDED"]
        ).first(),
        120,
        "the job to end",
    )


def test_a_killed_move_reruns_without_loss_or_duplicate(
    eager_tasks, small_parts, sc_table, make_queue
):
    src, d1, d2 = (make_queue(n, sc_table) for n in ("SRC", "D1", "D2"))
    ids = enqueue(src, [{"n": i} for i in range(N)])
    job = _start(src, [d1, d2], "MOVE")

    os.killpg(job.pid, signal.SIGKILL)  # the spark-submit process group: JVM and Python driver
    job = _ended(job)
    assert job.state == "FAILED" and "exited" in job.error
    done = SparkJobPart.objects.filter(job=job).count()
    assert 3 <= done < 60
    # Whole parts only: what left the source is exactly what both destinations hold.
    left = set(Message.objects.filter(queue=src).values_list("id", flat=True))
    moved = sorted(set(ids) - left)
    assert source_ids_at(d1) == source_ids_at(d2) == moved

    services.spark_job_rerun(user=None, job=job)
    job = _ended(job)
    assert job.state == "SUCCEEDED", job.error
    assert job.attempt == 2
    assert source_ids_at(d1) == source_ids_at(d2) == sorted(ids)
    assert not Message.objects.filter(queue=src).exists()
    totals = job_totals(job)
    assert totals["parts"] == 60 and totals["read"] == N
    assert totals["propagated"] == {"D1": N, "D2": N}
    attempts = set(SparkJobPart.objects.filter(job=job).values_list("attempt", flat=True))
    assert attempts == {1, 2}


def test_a_cancelled_copy_stops_and_a_rerun_finishes_it(
    eager_tasks, small_parts, sc_table, make_queue
):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(N)])
    job = _start(src, [dst], "COPY")

    services.spark_job_cancel(user=None, job=job)
    job = _ended(job)
    assert job.state == "CANCELLED"
    assert job.pid is None
    partial = source_ids_at(dst)
    assert len(partial) == len(set(partial)) < N
    assert job_totals(job)["propagated"]["DST"] == len(partial)

    services.spark_job_rerun(user=None, job=job)
    job = _ended(job)
    assert job.state == "SUCCEEDED", job.error
    assert source_ids_at(dst) == sorted(ids)
    assert Message.objects.filter(queue=src).count() == N


def test_a_job_no_worker_took_is_cancelled_at_once(admin_user, sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    enqueue(src, [{"n": 1}])
    job = services.spark_job_submit(user=admin_user, source_queue=src, destinations=[dst])
    # (the task went to a Celery queue no worker of this test consumes: it stays SUBMITTED)
    services.spark_job_cancel(user=admin_user, job=job)
    job.refresh_from_db()
    assert job.state == "CANCELLED" and job.cancel_requested
    # Its task, when a worker takes it, finds nothing to claim.
    from jobs import spark_submit
    from queues import services as qs

    assert (
        spark_submit.execute(job.pk, job.attempt, conninfo=qs.conninfo(), worker="w", task_id="")
        == "skipped"
    )
    with pytest.raises(services.Conflict):
        services.spark_job_cancel(user=admin_user, job=job)
