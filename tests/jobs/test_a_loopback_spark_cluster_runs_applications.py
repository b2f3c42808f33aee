"""A PySpark application submitted to the loopback standalone cluster runs there (an ``app-`` id
given by the master, executors on the worker), not in local mode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark_cluster import HOST, SPARK_SUBMIT, LoopbackSparkCluster, spark_env

TINY_APP = Path(__file__).parent / "spark_apps" / "tiny_app.py"


def spark_submit(
    cluster: LoopbackSparkCluster, app: Path, *args: str, timeout: float = 180
) -> tuple[int, str, str]:
    """Run ``app`` on the cluster in client mode (the only mode for Python on standalone)."""
    conf = {
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.ui.enabled": "false",  # no driver UI port to pick, nothing to race for
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": sys.executable,  # the executors' Python workers use this venv
        "spark.executor.memory": "512m",  # fits the 1 GB worker; more would wait forever
        "spark.cores.max": "2",
    }
    argv = [SPARK_SUBMIT, "--master", cluster.master_url, "--deploy-mode", "client"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(app), *args]
    # Own session, so a timeout can kill the driver JVM and its Python child together.
    proc = subprocess.Popen(
        argv,
        env=spark_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"spark-submit still running after {timeout} s\n{out}\n{err[-4000:]}")
    return proc.returncode, out, err


def json_lines(out: str) -> list[dict[str, Any]]:
    # The driver's Python stderr is merged into spark-submit's stdout: skip what is not ours.
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.spark_cluster
def test_an_application_runs_on_the_cluster_and_the_master_records_it(
    spark_cluster: LoopbackSparkCluster,
) -> None:
    rc, out, err = spark_submit(spark_cluster, TINY_APP, "1000", "4")

    assert rc == 0, f"{out}\n{err[-4000:]}"
    done = [line for line in json_lines(out) if line.get("event") == "done"]
    assert len(done) == 1, out
    result = done[0]
    assert result["app_id"].startswith("app-"), result  # "local-…" in local mode
    assert result["master"] == spark_cluster.master_url
    assert (result["partitions"], result["count"], result["sum"]) == (4, 1000, sum(range(1000)))

    # The master moves the app to the completed list once the driver has gone.
    deadline = time.monotonic() + 15
    while True:
        state = spark_cluster.state()
        completed = {app["id"]: app["state"] for app in state["completedapps"]}
        if result["app_id"] in completed or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert completed.get(result["app_id"]) == "FINISHED", state
    assert result["app_id"] not in {app["id"] for app in state["activeapps"]}
