"""The driver log's tail reaches the job row while the driver runs, not only once it has ended,
so the job's page (which polls the row) shows it live. The task's follower (``follow``) is run
on a real process that writes a log and waits to be let go; no Spark is needed for what is
tested here: which of the driver's lines are on the row, and when."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from jobs import services, spark_submit
from jobs.models import SparkJob

from .spark_helpers import in_thread, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# A stand-in driver: one line in its log, then it waits for the test to let it go, then a last
# line and the application's ``finished`` report, as app.py ends.
SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    release = sys.argv[1]
    print("WARN first line while running", file=sys.stderr, flush=True)
    while not os.path.exists(release):
        time.sleep(0.1)
    print("WARN last line before the end", file=sys.stderr, flush=True)
    print('{"event": "finished"}', flush=True)
    """
)


@pytest.fixture
def running_job(sc_table, make_queue) -> SparkJob:
    src = make_queue("SRC", sc_table)
    # The row as spark_job_submit leaves it (its task is not sent: this test is the task).
    job = SparkJob.objects.create(source_queue=src, source_name=src.name, attempt=1)
    claimed = services.spark_job_claim(job.pk, 1, worker="test", task_id="")
    assert claimed is not None
    return claimed


def test_the_tail_is_on_the_row_while_the_driver_runs_and_whole_at_the_end(
    running_job, tmp_path: Path
):
    release = tmp_path / "release"
    driver = spark_submit.Driver(
        [sys.executable, "-c", SCRIPT, str(release)], {}, tmp_path / "driver-1.log"
    )
    outcome: list[str] = []
    follower = in_thread(lambda: outcome.append(spark_submit.follow(running_job, driver)))
    try:
        live = wait_for(
            lambda: SparkJob.objects.filter(
                pk=running_job.pk, driver_log_tail__contains="first line while running"
            ).first(),
            60,
            "the first line on the job row",
        )
        # Saved while the driver still runs: it is waiting for the release file.
        assert driver.proc.poll() is None
        assert live.state == "RUNNING"
        assert "last line" not in live.driver_log_tail
    finally:
        release.touch()
        follower.join(60)

    assert outcome == ["succeeded"]
    job = SparkJob.objects.get(pk=running_job.pk)
    assert job.state == "SUCCEEDED"
    assert "first line while running" in job.driver_log_tail
    assert "last line before the end" in job.driver_log_tail
    assert len(job.driver_log_tail) <= spark_submit.LOG_TAIL
