"""``--repeat K`` and ``--settle S`` of the ``queues`` suite: the K runs made into one result (the
medians, their spread), and the queue monitor's housekeeping between runs."""

from __future__ import annotations

import statistics
import time
from typing import Any

from console.bench.peers import add_ratios
from console.bench.workload import Log


def _figures(run: dict[str, Any]) -> list[str]:
    return [k for k in run if f"{k}_n" in run]


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from the runs: each figure (and its seconds) the median over the runs, its
    ratios recomputed from those medians; the 4-consumer counts those of the worst run; other
    context from the last run."""
    if len(runs) == 1:
        return dict(runs[0])
    out = dict(runs[-1])
    for key in _figures(runs[0]):
        out[key] = round(statistics.median(r[key] for r in runs), 1)
        out[f"{key}_s"] = round(statistics.median(r[f"{key}_s"] for r in runs), 3)
    out["dequeue_4_consumers_total"] = min(r["dequeue_4_consumers_total"] for r in runs)
    out["dequeue_4_consumers_duplicates"] = max(r["dequeue_4_consumers_duplicates"] for r in runs)
    out["dequeue_4_consumers_left"] = max(r["dequeue_4_consumers_left"] for r in runs)
    for key in [k for k in out if k.startswith("ratio_")]:
        del out[key]
    add_ratios(out)
    return out


def spread(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per figure: lowest, highest, and (highest - lowest) / median in percent."""
    out = {}
    for key in _figures(runs[0]):
        values = [r[key] for r in runs]
        median = statistics.median(values)
        out[key] = {
            "min": min(values),
            "max": max(values),
            "spread_pct": round(100 * (max(values) - min(values)) / median, 1) if median else None,
        }
    return out


def monitor_settle(seconds: float, log: Log) -> dict[str, Any]:
    """Run the queue monitor as beat would (every ``AQ_MONITOR_INTERVAL_S``) for ``seconds``,
    so its housekeeping has happened before the next run."""
    from django.conf import settings

    from queues.tasks import queue_monitor_run

    log(f"queue monitor: {seconds:g} s of housekeeping")
    interval = float(getattr(settings, "AQ_MONITOR_INTERVAL_S", 1.0))
    passes = 0
    vacuumed: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        # The beat task's own body (the pass, then VACUUM of the bloated storage), run here.
        vacuumed += queue_monitor_run()["vacuumed"]
        passes += 1
        time.sleep(max(0.0, min(interval, end - time.monotonic())))
    return {"seconds": seconds, "monitor_passes": passes, "vacuumed": vacuumed}
