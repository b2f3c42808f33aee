"""What every side of the ``queues`` comparison shares (the engine, the plain tables, PGMQ, PgQ):
the payload, the workload sizes, the timing record and the error that withholds a figure.

No Django here: the consumer processes of the 4-consumer workloads import this module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# bench/payload.json of the shared workloads, byte for byte (241 bytes of JSON): kept here so the
# suite runs from a plain clone.
PAYLOAD_JSON = (
    '{"order_id": 12345, "region": "EUROPE", "priority": 1, "customer": "ACME Corporation", '
    '"items": [{"sku": "X-1", "qty": 3}, {"sku": "Y-2", "qty": 1}], "note": '
    '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
)
PAYLOAD: dict[str, Any] = json.loads(PAYLOAD_JSON)

BATCH = 100
CONSUMERS = 4
FULL_SIZES: dict[str, int] = {
    "enqueue_single_per_txn": 5_000,
    "enqueue_batch100": 100_000,
    "dequeue_single": 5_000,
    "dequeue_batch100": 50_000,
    "dequeue_4_consumers": 20_000,
    "enqueue_single_buffered": 5_000,
    "dequeue_single_buffered": 5_000,
}
# Rounds of the interleaved protocol (``interleaved``): each side's workload in this many chunks.
ROUNDS = 10
# Seconds a consumer process may take to start and connect before the run is abandoned.
START_TIMEOUT_S = 120.0

Log = Callable[[str], None]


class BenchError(RuntimeError):
    """A workload did not do what it claims (wrong count, a consumer died, a peer missing or
    failing): no figure is given."""


@dataclass(frozen=True)
class Timing:
    n: int
    seconds: float

    @property
    def rate(self) -> float:
        return round(self.n / self.seconds, 1) if self.seconds > 0 else 0.0


def sizes_for(scale: float) -> dict[str, int]:
    """The workload sizes at ``scale`` (1.0 = WORKLOADS.md); batched ones stay whole batches and
    the concurrent one a multiple of the consumers."""
    steps = {"enqueue_batch100": BATCH, "dequeue_batch100": BATCH, "dequeue_4_consumers": CONSUMERS}
    sizes = {}
    for key, full in FULL_SIZES.items():
        step = steps.get(key, 1)
        sizes[key] = max(step, round(full * scale / step) * step)
    return sizes


def record(out: dict[str, Any], key: str, timing: Timing, log: Log) -> None:
    """Put a workload's rate, seconds and count under ``key`` and log the rate."""
    out[key] = timing.rate
    out[f"{key}_s"] = round(timing.seconds, 3)
    out[f"{key}_n"] = timing.n
    log(f"  {key:<40} {timing.rate:>12,.1f}/s")


Side = tuple[str, Callable[[int], Timing]]


def interleaved(sides: list[Side], n: int, *, rounds: int, step: int = 1) -> dict[str, Timing]:
    """Run each side's workload of ``n`` messages in ``rounds`` chunks (whole ``step``s), the
    sides taking turns chunk by chunk and the first turn moving on each round: a drift of the
    machine's speed, or a side's position right after another's, then weighs on every side
    alike instead of on whichever ran first. One round (or one side) is the sequential
    protocol. Each side's figure is its n messages over the sum of its chunks' seconds."""
    rounds = max(1, min(rounds, n // step))
    steps, extra = divmod(n // step, rounds)
    chunks = [(steps + (1 if r < extra else 0)) * step for r in range(rounds)]
    chunks[-1] += n - sum(chunks)
    spent = {key: 0.0 for key, _ in sides}
    for r, chunk in enumerate(chunks):
        for key, work in sides[r % len(sides) :] + sides[: r % len(sides)]:
            spent[key] += work(chunk).seconds
    return {key: Timing(n, spent[key]) for key, _ in sides}
