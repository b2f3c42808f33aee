"""``bench parallel``: a logical queue of 3 partitions against one plain queue, in the same run.

Both sides carry the same workload: 4 producer processes enqueue single-message transactions
while 4 consumer processes dequeue single-message transactions, from one start line until every
message is consumed (end-to-end messages per second). On the logical queue each producer is a
fixed client of one partition (producer i → partition i mod 3) and each consumer starts at its
own partition and moves on to the others when it is empty (the instance's other partitions).
A third run sends keyed groups (each producer its own keys, sequence numbers per key) and
consumes them with ordered dequeues (one consumer per partition at a time, the partition's
advisory lock held until the dequeue commits) and counts the per-key order violations.

Processes, not threads (the GIL would serialise the clients), spawned once for the three runs;
they run parallel/loadgen.py, which imports psycopg and the pure engines only (not Django, not
Celery: importing the console package costs each child seconds on a loaded machine). Everything runs on this machine's one PostgreSQL: the partitions share
its CPU and disk, so the ratio shows what splitting a queue saves in contention on one node,
not the scaling over nodes of spec T8 (which needs several database hosts' worth of instances).
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from console.bench.workload import BenchError, Timing, record
from parallel import loadgen
from queues import engine

Log = Callable[[str], None]

PARTITIONS = 3
PRODUCERS = 4
CONSUMERS = 4
KEYS_PER_PRODUCER = loadgen.KEYS_PER_PRODUCER
FULL_N = 4_000  # messages per workload at scale 1.0
# failover_s: the instances' heartbeat limit its two workers run with (the default is 15 s; the
# figure is bounded by it plus a dispatch and a run's start, so it is reported beside it).
FAILOVER_LIMIT_S = 5.0
FAILOVER_N = 3_000  # at any scale: the figure is a time, and the kill must land mid-flow
# Instance names of the failover workload's two workers: fixed, so repeated runs reuse them
# (instances are never forgotten) instead of leaving two DOWN instances behind per run.
FAILOVER_INSTANCES = ("bench-failover-1", "bench-failover-2")


def size_for(scale: float) -> int:
    """Messages per workload: a multiple of the producers times their keys, at least one each."""
    step = PRODUCERS * KEYS_PER_PRODUCER
    return max(step, round(FULL_N * scale / step) * step)


def _run_all(
    conninfo: str, phases: list[loadgen.Phase]
) -> list[tuple[Timing, list[int], list[tuple[int, str, int, int]]]]:
    """Every phase through the same PRODUCERS + CONSUMERS processes (spawned once: a spawn
    costs seconds on a loaded machine), each phase from one start line to its last client's
    end."""
    try:
        return [
            (Timing(n, seconds), produced, rows)
            for n, seconds, produced, rows in loadgen.run_phases(
                conninfo, phases, producers=PRODUCERS, consumers=CONSUMERS
            )
        ]
    except loadgen.LoadError as exc:
        raise BenchError(str(exc)) from exc


def _check_once(label: str, produced: list[int], rows: list[tuple[int, str, int, int]]) -> None:
    ids = [r[0] for r in rows]
    if len(ids) != len(set(ids)) or sorted(ids) != sorted(produced):
        raise BenchError(
            f"{label}: {len(produced)} enqueued, {len(set(ids))} distinct consumed, "
            f"{len(ids) - len(set(ids))} twice: a message was lost or delivered twice."
        )


def order_violations(rows: list[tuple[int, str, int, int]]) -> int:
    """Per key, consecutive consumptions (by the stamp taken before each commit) whose sequence
    number goes down."""
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for _mid, key, seq, stamp in rows:
        by_key[key].append((stamp, seq))
    return sum(
        1
        for seqs in by_key.values()
        for a, b in zip(sorted(seqs), sorted(seqs)[1:], strict=False)
        if b[1] < a[1]
    )


# --- failover_s ----------------------------------------------------------------------------------


def failover(prefix: str, n: int, log: Log) -> dict[str, Any]:
    """Seconds from SIGKILL of the owner instance's worker to the first message moved by the
    secondary's: two real Celery workers (instances FAILOVER_INSTANCES, heartbeat limit
    FAILOVER_LIMIT_S) on a private Celery queue, a queue table with primary 1 and secondary 2,
    a propagation out of it with messages flowing; this process drives reap and dispatch as
    beat would (every 50 ms). Then every message must reach the destination exactly once."""
    from django.conf import settings
    from django.db.models.functions import Now
    from django.test.utils import override_settings

    from console.bench.propagation import WorkerProcess
    from instances.models import Instance
    from jobs import services as js
    from jobs.models import PropagationRun
    from queues import services as qs
    from queues.models import Message

    celery_queue = f"aqbench_{prefix.lower()}"
    env = {
        "AQ_INSTANCE_HEARTBEAT_LIMIT_S": str(FAILOVER_LIMIT_S),
        "AQ_WORKER_HEARTBEAT_S": "0.3",
        "AQ_PROPAGATION_BATCH": "20",  # many transactions per window: the kill lands inside one
    }
    workers = [
        WorkerProcess(celery_queue, f"{prefix.lower()}f{i}", env={**env, "AQ_INSTANCE_NAME": name})
        for i, name in enumerate(FAILOVER_INSTANCES, start=1)
    ]
    alive = list(workers)  # the ones that must stay up
    made: list[Any] = []
    prop = None
    # The runs' tasks go to the instances' copies of the private queue, not the console's.
    routed = override_settings(AQ_PROPAGATION={**settings.AQ_PROPAGATION, "QUEUE": celery_queue})
    routed.enable()
    try:

        def wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for w in alive:
                    w.check()
                js.propagation_reap()
                js.propagation_dispatch()
                value = predicate()
                if value:
                    return value
                time.sleep(0.05)
            raise BenchError(f"failover_s: timed out after {timeout:.0f} s waiting for {what}.")

        wait(
            lambda: (
                Instance.objects.filter(name__in=FAILOVER_INSTANCES, alive_until__gt=Now()).count()
                == 2
            ),
            90,
            "both workers' instances to report",
        )
        qt = qs.queue_table_create(
            user=None,
            name=f"{prefix}_FO_QT",
            multiple_consumers=True,
            sort_order="enq_time",
            primary_instance=FAILOVER_INSTANCES[0],
            secondary_instance=FAILOVER_INSTANCES[1],
        )
        made.append(qt)
        dqt = qs.queue_table_create(user=None, name=f"{prefix}_FO_DQT")
        made.append(dqt)
        src = qs.queue_create(user=None, name=f"{prefix}_FO_SRC", queue_table=qt)
        dst = qs.queue_create(user=None, name=f"{prefix}_FO_DST", queue_table=dqt)
        prop = js.propagation_create(
            user=None, name=f"{prefix}_FO", source_queue=src, destination_queue=dst
        )
        runs = PropagationRun.objects.filter(propagation=prop)
        for start in range(0, n, 500):
            qs.message_enqueue(
                user=None,
                queue=src,
                messages=[
                    engine.NewMessage(payload={"id": i}) for i in range(start, min(n, start + 500))
                ],
            )
        at_dst = Message.objects.filter(queue=dst)
        wait(lambda: at_dst.count() >= max(1, n // 10), 120, "the owner to move a tenth")
        if at_dst.count() >= n:
            raise BenchError("failover_s: every message moved before the kill; raise the size.")
        alive.remove(workers[0])
        workers[0].proc.kill()
        killed = time.monotonic()
        wait(
            lambda: runs.filter(worker=workers[1].hostname, propagated__gt=0).exists(),
            FAILOVER_LIMIT_S + 60,
            "the secondary's first moved message",
        )
        seconds = time.monotonic() - killed
        wait(lambda: at_dst.count() >= n, 120, "every message at the destination")
        ids = [m["id"] for m in at_dst.values_list("payload", flat=True)]
        if sorted(ids) != list(range(n)):
            raise BenchError(
                f"failover_s: {len(ids)} at the destination for {n} sent, "
                f"{len(ids) - len(set(ids))} twice: a message was lost or moved twice."
            )
    finally:
        for w in workers:
            w.stop(timeout=10)
        routed.disable()
        if prop is not None:
            js.propagation_delete(user=None, propagation=prop)
        for t in made:
            for q in t.queues.all():
                qs.queue_purge(user=None, queue=q, condition=engine.PurgeCondition())
            qs.queue_table_delete(user=None, queue_table=t)
    log(
        f"  {'failover_s':<40} {seconds:>12.2f}  (heartbeat limit {FAILOVER_LIMIT_S} s, "
        f"{n} messages, none lost or moved twice)"
    )
    return {
        "failover_s": round(seconds, 2),
        "failover_heartbeat_limit_s": FAILOVER_LIMIT_S,
        "failover_n": n,
    }


# --- the suite -----------------------------------------------------------------------------------


def run(*, scale: float = 1.0, baseline: bool = False, log: Log = print) -> dict[str, Any]:
    """Run the three workloads on a fresh logical queue and plain queue; drop both after."""
    from parallel import services as ps
    from parallel.models import LogicalQueue
    from queues import services as qs

    del baseline  # the single plain queue is this suite's own baseline, always measured
    n = size_for(scale)
    prefix = f"BENCHP_{secrets.token_hex(4).upper()}"
    conninfo = qs.conninfo()
    out: dict[str, Any] = {
        "suite": "parallel",
        "scale": scale,
        "prefix": prefix,
        "partitions": PARTITIONS,
        "producers": PRODUCERS,
        "consumers": CONSUMERS,
    }
    log(f"parallel benchmark under {prefix} (scale {scale}, {n} messages per workload)")
    # The ring is over the instances known (if any): the clients here are fixed to partitions,
    # so the run neither needs live instances nor registers made-up ones.
    lq = ps.logical_queue_create(user=None, name=prefix, partitions=PARTITIONS, instances=None)
    qt = qs.queue_table_create(user=None, name=f"{prefix}_SINGLE_QT")
    single = qs.queue_create(user=None, name=f"{prefix}_SINGLE", queue_table=qt)
    part_ids = list(lq.partitions.order_by("position").values_list("queue_id", flat=True))
    try:
        (single_run, parallel_run, ordered_run) = _run_all(
            conninfo,
            [
                loadgen.Phase([single.pk], n),
                loadgen.Phase(part_ids, n),
                loadgen.Phase(part_ids, n, keyed=True, ordered=True),
            ],
        )
        timing, produced, rows = single_run
        _check_once("single_queue_throughput", produced, rows)
        record(out, "single_queue_throughput", timing, log)

        timing, produced, rows = parallel_run
        _check_once("parallel_throughput", produced, rows)
        record(out, "parallel_throughput", timing, log)
        out["parallel_vs_single_ratio"] = (
            round(out["parallel_throughput"] / out["single_queue_throughput"], 3)
            if out["single_queue_throughput"]
            else None
        )
        log(f"  {'parallel_vs_single_ratio':<40} {out['parallel_vs_single_ratio']:>12}")

        timing, produced, rows = ordered_run
        _check_once("parallel_ordered", produced, rows)
        record(out, "parallel_ordered_throughput", timing, log)
        out["parallel_order_violations"] = order_violations(rows)
        out["parallel_order_keys"] = PRODUCERS * KEYS_PER_PRODUCER
        log(f"  {'parallel_order_violations':<40} {out['parallel_order_violations']:>12}")
        out.update(failover(prefix, FAILOVER_N, log))
    finally:
        from queues.models import Queue

        for q in Queue.objects.filter(pk__in=[*part_ids, single.pk]):
            qs.queue_purge(user=None, queue=q, condition=engine.PurgeCondition())
        ps.logical_queue_delete(user=None, logical_queue=LogicalQueue.objects.get(pk=lq.pk))
        qs.queue_delete(user=None, queue=single)
        qs.queue_table_delete(user=None, queue_table=qt)
    out["note"] = (
        "One PostgreSQL on one machine: the partitions share its CPU and disk, so the ratio "
        "measures the contention a split saves on one node, not scaling over nodes (T8)."
    )
    return out
