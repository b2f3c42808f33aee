"""AQ_SPARK_JAVA_OPTIONS reaches the driver and the executors as spark-submit confs, and an
empty setting adds neither (the product's default)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from jobs import spark_submit


def _confs(argv: list[str]) -> dict[str, str]:
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_the_jvm_options_go_to_driver_and_executors(settings):
    settings.AQ_SPARK = {**settings.AQ_SPARK, "JAVA_OPTIONS": " -XX:TieredStopAtLevel=1 "}
    job = SimpleNamespace(pk=7, master="local[2]")
    argv, _env = spark_submit.command(job, Path("/nonexistent/spec.json"))
    confs = _confs(argv)
    assert confs["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"
    assert confs["spark.executor.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"


def test_no_jvm_options_by_default(settings):
    settings.AQ_SPARK = {**settings.AQ_SPARK, "JAVA_OPTIONS": ""}
    argv, _env = spark_submit.command(SimpleNamespace(pk=7, master="local[2]"), Path("/x"))
    confs = _confs(argv)
    assert "spark.driver.extraJavaOptions" not in confs
    assert "spark.executor.extraJavaOptions" not in confs
