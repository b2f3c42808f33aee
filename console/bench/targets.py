"""The Performance targets of issue 13, checked against one result of ``bench queues``: each one
PASS or FAIL with the figures it compared, or NOT RUN when the run lacked what it compares with
(``--peers``, ``--baseline``, ``--repeat``). Reported, not enforced: the command's exit status
stays that of the invariant checks.

- every workload >= 1.5x PGMQ, except where that is above the plain table's figure for the same
  shape of work (a fsync'd commit per message is bounded by the disk): there >= 90% of the plain
  table;
- never below PGMQ on any workload, nor below PgQ on the two enqueue workloads;
- batched workloads >= 60% of their plain-table limit;
- buffered single workloads >= 5x their persistent figures and >= 80% of a plain UNLOGGED table;
- ``dequeue_4_consumers_total`` exactly the messages loaded (20,000 at full scale), none twice,
  none left;
- no memory of history: every later run of ``--repeat`` (after ``--history``) not more than 10%
  below the first run, on the fresh database.

And those of issue 16 for ``bench console`` (:func:`console_check`): every page's median at most
150 ms, the API's queue list at most 100 ms, and the queue list's queries the same at two page
sizes.
"""

from __future__ import annotations

from typing import Any

PASS, FAIL, NOT_RUN = "PASS", "FAIL", "NOT RUN"

# Engine key -> the plain-table key for the same shape of work.
PLAIN = {
    "enqueue_single_per_txn": "baseline_insert_single_per_txn",
    "enqueue_batch100": "baseline_copy_batch100",
    "dequeue_single": "baseline_delete_single",
    "dequeue_batch100": "baseline_delete_batch100",
    "dequeue_4_consumers": "baseline_delete_4_consumers",
    "enqueue_single_buffered": "baseline_unlogged_insert_single_per_txn",
    "dequeue_single_buffered": "baseline_unlogged_delete_single",
}
PERSISTENT = ("enqueue_single_per_txn", "enqueue_batch100", "dequeue_single", "dequeue_batch100")
COMPARED = (*PERSISTENT, "dequeue_4_consumers")
BUFFERED = {
    "enqueue_single_buffered": "enqueue_single_per_txn",
    "dequeue_single_buffered": "dequeue_single",
}
PGQ_KEYS = ("enqueue_single_per_txn", "enqueue_batch100")
BATCHED = ("enqueue_batch100", "dequeue_batch100")
HISTORY_TOLERANCE = 0.10


def _verdict(
    text: str, value: float, required: float, compared: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "status": PASS if value >= required else FAIL,
        "target": text,
        "value": value,
        "required": round(required, 1),
        "compared": compared,
        **extra,
    }


def _not_run(text: str, reason: str) -> dict[str, Any]:
    return {"status": NOT_RUN, "target": text, "reason": reason}


def _missing(result: dict[str, Any], *keys: str) -> str | None:
    gone = [k for k in keys if k not in result]
    if not gone:
        return None
    needs = []
    if any(k.startswith(("pgmq_", "pgq_")) for k in gone):
        needs.append("--peers")
    if any(k.startswith("baseline_") for k in gone):
        needs.append("--baseline")
    if any(k in BUFFERED for k in gone):
        return "the engine has no buffered messages (delivery_mode) yet"
    return f"needs {' and '.join(needs)}" if needs else f"missing {', '.join(gone)}"


def _at_least(
    result: dict[str, Any], text: str, key: str, other: str, factor: float
) -> dict[str, Any]:
    """``key >= factor x other``, or NOT RUN when the run lacks either."""
    why = _missing(result, key, other)
    if why:
        return _not_run(text, why)
    return _verdict(text, result[key], factor * result[other], {other: result[other]})


def check(result: dict[str, Any], runs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Every target, keyed by a short name, from ``result``'s figures (medians when repeated)."""
    out: dict[str, Any] = {}
    for key in COMPARED:
        plain, pgmq = PLAIN[key], f"pgmq_{key}"
        text = f"{key} >= 1.5x PGMQ, or >= 90% of the plain table where that is lower"
        why = _missing(result, key, pgmq, plain)
        if why:
            out[f"{key}_ahead"] = _not_run(text, why)
        else:
            # The rule: 1.5x PGMQ unless that is above what the plain table itself does.
            within = 1.5 * result[pgmq] <= result[plain]
            out[f"{key}_ahead"] = _verdict(
                text,
                result[key],
                1.5 * result[pgmq] if within else 0.9 * result[plain],
                {pgmq: result[pgmq], plain: result[plain]},
                rule="1.5x PGMQ" if within else "90% of the plain table",
            )
        out[f"{key}_not_below_pgmq"] = _at_least(result, f"{key} not below PGMQ", key, pgmq, 1)
    for key in PGQ_KEYS:
        text = f"{key} not below PgQ"
        out[f"{key}_not_below_pgq"] = _at_least(result, text, key, f"pgq_{key}", 1)
    for key in BATCHED:
        text = f"{key} >= 60% of the plain table"
        out[f"{key}_vs_plain"] = _at_least(result, text, key, PLAIN[key], 0.6)
    for key, persistent in BUFFERED.items():
        text = f"{key} >= 5x {persistent}"
        out[f"{key}_vs_persistent"] = _at_least(result, text, key, persistent, 5)
        text = f"{key} >= 80% of the plain UNLOGGED table"
        out[f"{key}_vs_unlogged"] = _at_least(result, text, key, PLAIN[key], 0.8)
    out["dequeue_4_consumers_exact"] = _exact(runs or [result])
    out.update(_history(result, runs))
    return out


def _exact(runs: list[dict[str, Any]]) -> dict[str, Any]:
    text = "dequeue_4_consumers_total exactly the messages loaded, none twice, none left"
    if any("dequeue_4_consumers_total" not in r for r in runs):
        return _not_run(text, "missing dequeue_4_consumers_total")
    bad = [
        r
        for r in runs
        if r["dequeue_4_consumers_total"] != r["dequeue_4_consumers_n"]
        or r["dequeue_4_consumers_duplicates"]
        or r["dequeue_4_consumers_left"]
    ]
    first = bad[0] if bad else runs[0]
    return {
        "status": FAIL if bad else PASS,
        "target": text,
        "value": first["dequeue_4_consumers_total"],
        "required": first["dequeue_4_consumers_n"],
        "compared": {
            "dequeue_4_consumers_duplicates": first["dequeue_4_consumers_duplicates"],
            "dequeue_4_consumers_left": first["dequeue_4_consumers_left"],
            "runs": len(runs),
        },
    }


def _history(result: dict[str, Any], runs: list[dict[str, Any]] | None) -> dict[str, Any]:
    keys = [k for k in (*COMPARED, *BUFFERED) if k in result]
    if not runs or len(runs) < 2:
        why = "needs --repeat 2 or more (with --history for millions of consumed messages)"
        return {"history": _not_run("no memory of history", why)}
    out = {}
    first = runs[0]
    for key in keys:
        later = [r[key] for r in runs[1:]]
        worst = min(later)
        compared: dict[str, Any] = {"first_run": first[key], "later_runs": later}
        # PGMQ never carries history here (its queues are new each run): its own change between
        # runs is the machine's drift, to read the engine's change against.
        if all(f"pgmq_{key}" in r for r in runs):
            compared["pgmq_first_run"] = first[f"pgmq_{key}"]
            compared["pgmq_later_runs"] = [r[f"pgmq_{key}"] for r in runs[1:]]
        out[f"{key}_history"] = _verdict(
            f"{key}: every later run within {HISTORY_TOLERANCE:.0%} below the first (fresh) run",
            worst,
            (1 - HISTORY_TOLERANCE) * first[key],
            compared,
            worst_ratio=round(worst / first[key], 3) if first[key] else None,
        )
    return out


# --- bench console (issue 16) -------------------------------------------------------------------

CONSOLE_MAX_MS = 150.0
CONSOLE_API_MAX_MS = 100.0
CONSOLE_MS_KEYS = (
    "queue_list_ms_p50",
    "job_list_ms_p50",
    "api_queue_list_ms_p50",
    "propagation_list_ms_p50",
    "dashboard_ms_p50",
    "topology_ms_p50",
)


def console_check(result: dict[str, Any]) -> dict[str, Any]:
    """The console's targets from one result of ``bench console``: lower is better here."""
    out: dict[str, Any] = {}
    for key in CONSOLE_MS_KEYS:
        limit = CONSOLE_API_MAX_MS if key == "api_queue_list_ms_p50" else CONSOLE_MAX_MS
        text = f"{key} <= {limit:g} ms"
        if key not in result:
            out[key] = _not_run(text, f"missing {key}")
            continue
        out[key] = {
            "status": PASS if result[key] <= limit else FAIL,
            "target": text,
            "value": result[key],
            "required": limit,
            "compared": {},
            "rule": "at most",
        }
    sizes = sorted(
        (int(k.rsplit("_", 1)[1]), v)
        for k, v in result.items()
        if k.startswith("queries_per_list_page_at_")
    )
    text = "queries_per_list_page does not grow with the page size"
    if len(sizes) < 2:
        out["queries_per_list_page_constant"] = _not_run(text, "needs the queue list at two sizes")
    else:
        (_, first), (_, last) = sizes[0], sizes[-1]
        out["queries_per_list_page_constant"] = {
            "status": PASS if last <= first else FAIL,
            "target": text,
            "value": last,
            "required": first,
            "compared": {f"per_page={size}": n for size, n in sizes},
            "rule": "at most",
        }
    return out


def report_lines(targets: dict[str, Any]) -> list[str]:
    """One line per target for stderr: status, what, and the numbers."""
    lines = []
    for name, t in targets.items():
        if t["status"] == NOT_RUN:
            lines.append(f"  {t['status']:<7} {name}: {t['reason']}")
            continue
        compared = ", ".join(f"{k} {v}" for k, v in t["compared"].items())
        rule = f" [{t['rule']}]" if "rule" in t else ""
        lines.append(
            f"  {t['status']:<7} {name}: {t['value']} against {t['required']}{rule}"
            + (f" ({compared})" if compared else "")
        )
    return lines
