"""The load generator of ``bench parallel`` (console/bench/parallel.py): producer and consumer
processes over physical queues, importing psycopg and the pure engines only, so a spawned child
starts fast (no Django, no Celery). Kept here, next to the rules it exercises (key → partition,
the ordered dequeue's partition lock), because the console package imports Celery."""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from parallel import engine as pengine
from queues import engine

KEYS_PER_PRODUCER = 4
START_TIMEOUT_S = 120.0
RUN_TIMEOUT_S = 600.0
PAYLOAD = {
    "order_id": 12345,
    "region": "EUROPE",
    "customer": "ACME Corporation",
    "items": [{"sku": "X-1", "qty": 3}, {"sku": "Y-2", "qty": 1}],
    "note": "x" * 80,
}

Row = tuple[int, str, int, int]  # (msgid, key, seq, stamp before the dequeue's commit)


class LoadError(RuntimeError):
    """A client failed or timed out: no figure."""


@dataclass(frozen=True)
class Phase:
    """One workload: ``n`` messages over ``queue_ids``. Producer i sends to queue i mod Q (a
    fixed client) or, ``keyed``, to its keys' partitions (stable hash); consumers start at their
    own queue and move on to the others while it is empty; ``ordered``: one consumer per queue
    at a time (the partition's advisory lock, held until the dequeue commits)."""

    queue_ids: list[int]
    n: int
    keyed: bool = False
    ordered: bool = False


def _produce(conn: psycopg.Connection, phase: Phase, which: int, n: int) -> list[int]:
    qids = phase.queue_ids
    infos = {qid: engine.queue_info(conn, qid) for qid in qids}
    conn.commit()
    ids: list[int] = []
    for i in range(n):
        if phase.keyed:
            key = f"p{which}-k{i % KEYS_PER_PRODUCER}"
            qid = qids[pengine.key_position(key, len(qids)) - 1]
            payload: Any = {"key": key, "seq": i // KEYS_PER_PRODUCER}
        else:
            qid = qids[which % len(qids)]
            payload = PAYLOAD
        ids += engine.enqueue(conn, infos[qid], [engine.NewMessage(payload=payload)])
        conn.commit()
    return ids


def _consume(
    conn: psycopg.Connection, phase: Phase, which: int, total: int, consumed: Any
) -> list[Row]:
    qids = phase.queue_ids
    infos = {qid: engine.queue_info(conn, qid) for qid in qids}
    conn.commit()
    start = which % len(qids)
    order = qids[start:] + qids[:start]
    rows: list[Row] = []
    end = time.monotonic() + RUN_TIMEOUT_S
    while consumed.value < total:
        if time.monotonic() > end:
            raise LoadError(f"consumer {which} timed out at {consumed.value}/{total}")
        for qid in order:
            if (
                phase.ordered
                and not conn.execute(
                    "SELECT pg_try_advisory_xact_lock(%s, %s)", (pengine.ORDERED_LOCK, qid)
                ).fetchone()[0]
            ):
                conn.rollback()
                continue
            got = engine.dequeue(conn, infos[qid], mode=engine.REMOVE)
            # Before the commit that frees the partition: its next consumer stamps later.
            stamp = time.monotonic_ns()
            conn.commit()
            if got:
                m = got[0]
                p = m.payload if isinstance(m.payload, dict) else {}
                rows.append((m.id, str(p.get("key", "")), int(p.get("seq", 0)), stamp))
                with consumed.get_lock():
                    consumed.value += 1
                break
    return rows


def _client(
    conninfo: str,
    phases: list[Phase],
    role: str,
    which: int,
    producers: int,
    counters: Any,
    barrier: Any,
    results: Any,
) -> None:
    try:
        with psycopg.connect(conninfo) as conn:
            for k, phase in enumerate(phases):
                per = phase.n // producers
                barrier.wait(timeout=START_TIMEOUT_S)
                if role == "producer":
                    body: Any = _produce(conn, phase, which, per)
                else:
                    body = _consume(conn, phase, which, per * producers, counters[k])
                results.put(("ok", (k, role, body), time.monotonic()))
    except BaseException as exc:
        barrier.abort()
        results.put(("error", f"{type(exc).__name__}: {exc}", time.monotonic()))


def run_phases(
    conninfo: str, phases: list[Phase], *, producers: int, consumers: int
) -> list[tuple[int, float, list[int], list[Row]]]:
    """Per phase: (messages, seconds from the start line to the last client's end, ids
    enqueued, rows consumed)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(producers + consumers + 1)
    results = ctx.Queue()
    counters = [ctx.Value("i", 0) for _ in phases]
    procs = [
        ctx.Process(
            target=_client,
            args=(conninfo, phases, role, i, producers, counters, barrier, results),
            daemon=True,
        )
        for role, count in (("producer", producers), ("consumer", consumers))
        for i in range(count)
    ]
    for p in procs:
        p.start()
    out = []
    try:
        for k, phase in enumerate(phases):
            try:
                barrier.wait(timeout=START_TIMEOUT_S)
            except Exception as exc:
                raise LoadError(f"A client failed: {results.get(timeout=5)[1]}") from exc
            start = time.monotonic()
            produced: list[int] = []
            rows: list[Row] = []
            ends = []
            for _ in procs:
                status, body, at = results.get(timeout=RUN_TIMEOUT_S + 60)
                if status != "ok":
                    raise LoadError(f"A client failed: {body}")
                got_k, role, data = body
                assert got_k == k
                (produced if role == "producer" else rows).extend(data)
                ends.append(at)
            per = phase.n // producers
            out.append((per * producers, max(ends) - start, produced, rows))
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return out
