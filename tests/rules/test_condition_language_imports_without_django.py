"""rules.lang is shipped unchanged to Spark executors and Celery workers: importing it must not
import Django (a subprocess, since this test session has Django loaded)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_condition_language_loads_no_django() -> None:
    code = (
        "import sys, rules.lang as L\n"
        "L.compile_python(L.parse(\"(:dml.is_null_tag() = 'Y' )\"))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
