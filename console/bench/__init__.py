"""Benchmark suites run by ``python manage.py bench <suite>`` (see docs/BENCHMARKS.md).

Each suite module exposes ``run(*, scale, baseline, log) -> dict`` returning the keys of the shared
bench/WORKLOADS.md plus extra context keys. Suites not built yet are listed with the issue that
builds them, so the command can refuse them clearly instead of printing a made-up number.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# Suite name -> module under console.bench.
SUITES: dict[str, str] = {
    "queues": "console.bench.queues",
    "rules": "console.bench.rules",
    "propagation": "console.bench.propagation",
    "gateway": "console.bench.gateway",
    "parallel": "console.bench.parallel",
    "console": "console.bench.console",
}

# Suites of bench/WORKLOADS.md whose subject is built by a later issue.
PENDING: dict[str, str] = {}

SuiteRunner = Callable[..., dict[str, Any]]


def suite_runner(name: str) -> SuiteRunner:
    """The ``run`` function of suite ``name``; KeyError if it has none."""
    return importlib.import_module(SUITES[name]).run
