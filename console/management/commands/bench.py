"""``python manage.py bench <suite> [--json] [--scale X] [--baseline]``: the workloads of the
shared bench/WORKLOADS.md against the configured PostgreSQL (``DATABASE_URL``). The ``queues``
suite also takes ``--peers`` (PGMQ and PgQ in the same run), ``--repeat K``, ``--history M`` and
``--settle S`` (docs/BENCHMARKS.md).

With ``--json`` progress goes to stderr and stdout carries exactly one JSON object (the last line);
without it a table is printed. A suite whose subject is not built yet is refused with the issue that
builds it: this command never prints a number it did not measure.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.bench import PENDING, SUITES, suite_runner
from console.bench.queues import BenchError
from console.bench.workload import ROUNDS

# Options of the queues suite alone, with their defaults (given only when changed).
QUEUES_ONLY: dict[str, Any] = {
    "peers": False,
    "repeat": 1,
    "history": 0.0,
    "settle": None,
    "rounds": ROUNDS,
}


class Command(BaseCommand):
    help = "Run a benchmark suite of bench/WORKLOADS.md (rates in messages per second)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("suite", help="Which suite: " + ", ".join(sorted(SUITES | PENDING)))
        parser.add_argument(
            "--json", action="store_true", help="Print one JSON object on the last line."
        )
        parser.add_argument(
            "--scale",
            type=float,
            default=1.0,
            help="Multiply every workload size (1.0 = WORKLOADS.md; smaller for a quick check).",
        )
        parser.add_argument(
            "--baseline",
            action="store_true",
            help="Also measure the same shapes of work on a plain indexed table.",
        )
        queues = parser.add_argument_group("queues suite only")
        queues.add_argument(
            "--peers",
            action="store_true",
            help="Also run PGMQ and PgQ on the same server, interleaved with the engine's "
            "workloads (install them with scripts/install-bench-peers.sh).",
        )
        queues.add_argument(
            "--rounds",
            type=int,
            default=ROUNDS,
            metavar="R",
            help=f"Run each compared workload in R chunks, the sides taking turns and the first "
            f"turn moving on each round (default {ROUNDS}); 1 runs each side's whole workload "
            "in turn, the engine's first.",
        )
        queues.add_argument(
            "--repeat",
            type=int,
            default=1,
            metavar="K",
            help="Run the whole suite K times back to back on the same queues; print each run, "
            "the medians and the spread.",
        )
        queues.add_argument(
            "--history",
            type=float,
            default=0.0,
            metavar="M",
            help="After run 1, put M million messages through the queues (enqueued and "
            "consumed), so runs 2..K measure queues with that history. Needs --repeat >= 2.",
        )
        queues.add_argument(
            "--settle",
            type=float,
            default=None,
            metavar="S",
            help="Seconds of queue-monitor passes before each run after the first (default 60 "
            "with --history, else 0).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        suite: str = options["suite"]
        if suite in PENDING:
            raise CommandError(f"The {suite!r} suite is not built yet: {PENDING[suite]}.")
        if suite not in SUITES:
            known = ", ".join(sorted(SUITES | PENDING))
            raise CommandError(f"Unknown suite {suite!r}; the suites are: {known}.")
        scale: float = options["scale"]
        if not scale > 0:
            raise CommandError("--scale must be greater than 0.")
        as_json: bool = options["json"]
        # Keep stdout for the result alone when it is machine-read.
        out = self.stderr if as_json else self.stdout

        extra = {k: options[k] for k, default in QUEUES_ONLY.items() if options[k] != default}
        if extra and suite != "queues":
            given = ", ".join("--" + k for k in extra)
            raise CommandError(f"{given}: only the queues suite takes these options.")
        try:
            result = suite_runner(suite)(
                scale=scale, baseline=options["baseline"], log=lambda line: out.write(line), **extra
            )
        except BenchError as exc:
            # A workload that did not do what it claims gives no figure, and a clear reason.
            raise CommandError(f"The {suite} benchmark failed: {exc}") from exc

        if as_json:
            self.stdout.write(json.dumps(result))
        else:
            width = max(len(k) for k in result)
            for key, value in result.items():
                shown = json.dumps(value) if isinstance(value, dict | list) else value
                self.stdout.write(f"{key:<{width}}  {shown}")
        problem = _invariant_problem(result)
        if problem:
            raise CommandError(problem)


def _invariant_problem(result: dict[str, Any]) -> str | None:
    """The figures are printed either way; a broken guarantee still fails the command."""
    if result.get("parallel_order_violations"):
        return (
            f"parallel_order_violations = {result['parallel_order_violations']}: a group key's "
            "messages were consumed out of their enqueue order."
        )
    if "dequeue_4_consumers_total" in result:
        expected = result["dequeue_4_consumers_n"]
        if result["dequeue_4_consumers_total"] != expected or result.get(
            "dequeue_4_consumers_duplicates"
        ):
            return (
                f"dequeue_4_consumers received {result['dequeue_4_consumers_total']} distinct "
                f"messages of {expected} with {result['dequeue_4_consumers_duplicates']} "
                "duplicates: a message was lost or delivered twice."
            )
    return None
