"""The PySpark application and what its executors import stand without Django: spark-submit
runs them from a zip, on machines that have no settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_spark_modules_import_without_django():
    code = (
        "import sys; import jobs.spark.app, jobs.spark.sink, jobs.spark.source, "
        "jobs.spark.transforms, rules.lang.arrow_rows; "
        "assert 'django' not in sys.modules, sorted(m for m in sys.modules if 'django' in m)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env={"PATH": ""}
    )
    assert out.returncode == 0, out.stderr
