"""Four consumer *processes* from one start line, for the ``dequeue_4_consumers`` shape of every
side (the engine, PGMQ, a plain table): processes, not threads, so the GIL does not serialise the
clients on a 2-core machine.

A side gives an *opener*: a module-level function ``opener(conn, arg) -> take`` run in the child
once its connection is open, returning ``take() -> id | None`` that removes one message in one
committed transaction (None: the queue is empty). An empty answer is final: nothing is enqueued
during the run, and SKIP LOCKED only hides rows another consumer holds, which that consumer then
removes and commits.
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from console.bench.workload import CONSUMERS, START_TIMEOUT_S, BenchError, Timing

Take = Callable[[], "int | None"]
Opener = Callable[[psycopg.Connection, Any], Take]


@dataclass(frozen=True)
class ConcurrentRun:
    timing: Timing
    ids: list[int]
    backend_pids: list[int]

    @property
    def distinct(self) -> int:
        return len(set(self.ids))

    @property
    def duplicates(self) -> int:
        return len(self.ids) - self.distinct


def _consumer(opener: Opener, conninfo: str, arg: Any, barrier: Any, results: Any) -> None:
    try:
        with psycopg.connect(conninfo) as conn:
            take = opener(conn, arg)
            barrier.wait(timeout=START_TIMEOUT_S)
            ids: list[int] = []
            while (got := take()) is not None:
                ids.append(got)
            results.put(("ok", (ids, conn.info.backend_pid), time.monotonic()))
    except BaseException as exc:
        barrier.abort()
        results.put(("error", f"{type(exc).__name__}: {exc}", time.monotonic()))


def run_consumers(opener: Opener, conninfo: str, arg: Any, n: int) -> ConcurrentRun:
    """Run :data:`CONSUMERS` consumer processes on ``n`` loaded messages; the clock runs from the
    barrier to the last one's end. Returns the timing and every id received (duplicates kept)."""
    # spawn, not fork: a child must not inherit this process's open PostgreSQL sockets.
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(CONSUMERS + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_consumer, args=(opener, conninfo, arg, barrier, results), daemon=True)
        for _ in range(CONSUMERS)
    ]
    for p in procs:
        p.start()
    try:
        try:
            barrier.wait(timeout=START_TIMEOUT_S)
        except Exception as exc:
            raise BenchError(f"A consumer failed to start: {_first_error(results)}") from exc
        start = time.monotonic()
        ids: list[int] = []
        ends: list[float] = []
        pids: list[int] = []
        for _ in procs:
            try:
                status, data, end = results.get(timeout=max(600.0, n / 10))
            except queue_mod.Empty as exc:
                raise BenchError("A consumer did not finish in time.") from exc
            if status != "ok":
                raise BenchError(f"A consumer failed: {data}")
            ids.extend(data[0])
            pids.append(data[1])
            ends.append(end)
        for p in procs:
            p.join(timeout=30)
        return ConcurrentRun(Timing(n, max(ends) - start), ids, pids)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=10)


def _first_error(results: Any) -> str:
    try:
        status, data, _ = results.get(timeout=5)
    except queue_mod.Empty:
        return "no report (the process died)"
    return data if status == "error" else "unknown"


def check_exact(name: str, run: ConcurrentRun, n: int, left: int) -> None:
    """A peer's or the plain table's concurrent run must hand out each loaded row exactly once;
    otherwise it gives no figure. (The engine's own counts are printed and judged by the
    command, as before.)"""
    if run.distinct != n or run.duplicates or left:
        raise BenchError(
            f"{name}: the four consumers received {run.distinct} distinct ids of {n} loaded, "
            f"{run.duplicates} twice, and {left} rows are left."
        )
