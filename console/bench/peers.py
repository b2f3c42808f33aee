"""``--peers``: PGMQ and PgQ measured on the same PostgreSQL server, in the same command run, on
the engine's workload shapes (shared bench/peers/README.md). They are installed in databases of
their own, ``pgmqpeer`` and ``pgqpeer``, by ``scripts/install-bench-peers.sh``; nothing of either is
part of this project: these clients only call their public SQL functions, as their users do.

The calls are those of the shared ``pgmq_bench.py`` and ``pgq_bench.py`` (which return only ids to
the client where the engine returns whole messages: if anything that favours the peers), on the
engine's queue states, so each pair of figures is the same work. Every side's one-message-per-
transaction workloads (the engine's, the peers', the plain tables') run in autocommit, where one
call is one statement and one committed transaction in one round trip:

- PGMQ (autocommit, so every call is one committed transaction): ``pgmq.send`` per message on a
  fresh queue; ``pgmq.pop`` draining exactly those; ``pgmq.send_batch`` of 100 on a second fresh
  queue; ``pgmq.read(q, 30, 100)`` + ``pgmq.delete(q, ids)`` in one transaction for the first half;
  and four consumer processes (as for the engine; the script used threads) calling ``pgmq.pop``
  on a third queue loaded with exactly the workload's messages. The shared script popped its
  single dequeues from the 100,000-message batch queue instead.
- PgQ (one consumer registered): ``pgq.insert_event`` per message in autocommit; 100
  ``pgq.insert_event`` per transaction; and the whole batch queue read by
  ``ticker`` + ``next_batch`` + ``get_batch_events`` + ``finish_batch``, PgQ's own way (it deletes
  no rows: tables rotate), printed as ``pgq_dequeue_batch_read`` with no ratio, as there is no
  engine workload of that shape. PgQ has no single-message dequeue.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from console.bench.consumers import ConcurrentRun, Take, check_exact, run_consumers
from console.bench.workload import BATCH, PAYLOAD_JSON, BenchError, Timing

PGMQ_DB = "pgmqpeer"
PGQ_DB = "pgqpeer"
INSTALL = "scripts/install-bench-peers.sh PGMQ_GIT_DIR"
# Seconds PgQ may go on answering "no batch yet" before its read is declared failed.
STALL_S = 120.0

# The engine key each peer measures, and the peer calls behind it (printed into the JSON).
PGMQ_WORKLOADS = {
    "enqueue_single_per_txn": "pgmq.send",
    "dequeue_single": "pgmq.pop",
    "enqueue_batch100": "pgmq.send_batch of 100",
    "dequeue_batch100": "pgmq.read(vt 30, 100) + pgmq.delete(ids), one transaction",
    "dequeue_4_consumers": "pgmq.pop by 4 processes",
}
# Engine keys with a PgQ figure to compare (PgQ has no single or concurrent dequeue).
PGQ_COMPARED = ("enqueue_single_per_txn", "enqueue_batch100")
PGQ_WORKLOADS = {
    "enqueue_single_per_txn": "pgq.insert_event in autocommit",
    "enqueue_batch100": "100 x pgq.insert_event + commit",
    "dequeue_batch_read": "pgq.ticker + next_batch + get_batch_events + finish_batch",
}


class PeerMissing(BenchError):
    """A peer is not installed on this server: no run starts."""


def peer_conninfo(conninfo: str, dbname: str) -> str:
    """The engine's connection parameters with another database: the same server, user, TLS."""
    params = conninfo_to_dict(conninfo)
    params["dbname"] = dbname
    return make_conninfo(**params)


def check_installed(conninfo: str) -> dict[str, Any]:
    """Which PGMQ and PgQ this server has, or :class:`PeerMissing` naming the install script."""
    found: dict[str, Any] = {}
    problems = []
    try:
        with psycopg.connect(peer_conninfo(conninfo, PGMQ_DB), autocommit=True) as conn:
            if (
                conn.execute("SELECT to_regprocedure('pgmq.send_batch(text, jsonb[])')").fetchone()[
                    0
                ]
                is None
            ):  # type: ignore[index]
                problems.append(f"the database {PGMQ_DB} has no PGMQ (schema pgmq)")
            row = conn.execute(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                "WHERE datname = current_database()"
            ).fetchone()
            found["pgmq_source"] = row[0] if row else None
    except psycopg.OperationalError as exc:
        problems.append(f"PGMQ: cannot connect to the database {PGMQ_DB} ({_first_line(exc)})")
    try:
        with psycopg.connect(peer_conninfo(conninfo, PGQ_DB), autocommit=True) as conn:
            row = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'pgq'"
            ).fetchone()
            if row is None:
                problems.append(f"the database {PGQ_DB} has no extension pgq")
            else:
                found["pgq_version"] = row[0]
    except psycopg.OperationalError as exc:
        problems.append(f"PgQ: cannot connect to the database {PGQ_DB} ({_first_line(exc)})")
    if problems:
        raise PeerMissing(
            "--peers needs PGMQ and PgQ installed on this server: "
            + "; ".join(problems)
            + f". Install them with: {INSTALL}"
        )
    return found


def add_ratios(out: dict[str, Any]) -> None:
    """``ratio_pgmq_<key>`` and ``ratio_pgq_<key>``: the engine's figure over the peer's."""
    for peer, keys in (("pgmq", PGMQ_WORKLOADS), ("pgq", PGQ_COMPARED)):
        for key in keys:
            theirs = out.get(f"{peer}_{key}")
            if key in out and theirs:
                out[f"ratio_{peer}_{key}"] = round(out[key] / theirs, 3)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


@contextmanager
def _failing_as(name: str) -> Iterator[None]:
    """A peer's SQL error ends the run with the peer's own reason; no figure is given."""
    try:
        yield
    except psycopg.Error as exc:
        raise BenchError(f"{name} failed: {_first_line(exc)}") from exc


# --- PGMQ ----------------------------------------------------------------------------------------


def pgmq_consumer(conn: psycopg.Connection, queue: str) -> Take:
    """Opener of a PGMQ ``dequeue_4_consumers`` consumer (runs in the child process)."""
    conn.autocommit = True

    def take() -> int | None:
        row = conn.execute("SELECT msg_id FROM pgmq.pop(%s)", (queue,)).fetchone()
        return int(row[0]) if row else None

    return take


class Pgmq:
    """PGMQ's side of one run: queues ``<prefix>_single``, ``_batch``, ``_concurrent``."""

    def __init__(self, conninfo: str, prefix: str) -> None:
        self.conninfo = peer_conninfo(conninfo, PGMQ_DB)
        self.prefix = prefix.lower()
        self.conn = psycopg.connect(self.conninfo, autocommit=True)
        self.queues: list[str] = []

    def _fresh(self, name: str) -> str:
        """The run's queue ``name``, created on first use (an interleaved workload comes back
        for its next chunk)."""
        queue = f"{self.prefix}_{name}"
        if queue not in self.queues:
            self.conn.execute("SELECT pgmq.create(%s)", (queue,))
            self.queues.append(queue)
        return queue

    def close(self) -> None:
        try:
            for queue in self.queues:
                self.conn.execute("SELECT pgmq.drop_queue(%s)", (queue,))
        finally:
            self.conn.close()

    def _send_batches(self, queue: str, n: int) -> None:
        for start in range(0, n, BATCH):
            msgs = [PAYLOAD_JSON] * min(BATCH, n - start)
            self.conn.execute("SELECT pgmq.send_batch(%s, %s::jsonb[])", (queue, msgs))

    def enqueue_single(self, n: int) -> Timing:
        with _failing_as("PGMQ enqueue_single_per_txn"):
            queue = self._fresh("single")
            start = time.perf_counter()
            for _ in range(n):
                self.conn.execute("SELECT pgmq.send(%s, %s::jsonb)", (queue, PAYLOAD_JSON))
            return Timing(n, time.perf_counter() - start)

    def dequeue_single(self, n: int) -> Timing:
        queue = f"{self.prefix}_single"
        with _failing_as("PGMQ dequeue_single"):
            start = time.perf_counter()
            for i in range(n):
                if not self.conn.execute("SELECT msg_id FROM pgmq.pop(%s)", (queue,)).fetchall():
                    raise BenchError(f"PGMQ's queue was empty after {i} of {n} pops.")
            return Timing(n, time.perf_counter() - start)

    def enqueue_batches(self, n: int) -> Timing:
        with _failing_as("PGMQ enqueue_batch100"):
            queue = self._fresh("batch")
            start = time.perf_counter()
            self._send_batches(queue, n)
            return Timing(n, time.perf_counter() - start)

    def dequeue_batches(self, n: int) -> Timing:
        queue = f"{self.prefix}_batch"
        with _failing_as("PGMQ dequeue_batch100"):
            start = time.perf_counter()
            for i in range(n // BATCH):
                with self.conn.transaction():
                    ids = [
                        r[0]
                        for r in self.conn.execute(
                            "SELECT msg_id FROM pgmq.read(%s, 30, %s)", (queue, BATCH)
                        ).fetchall()
                    ]
                    self.conn.execute("SELECT pgmq.delete(%s, %s::bigint[])", (queue, ids))
                if len(ids) != BATCH:
                    raise BenchError(f"PGMQ's read {i} returned {len(ids)} messages.")
            return Timing(n, time.perf_counter() - start)

    def dequeue_concurrent(self, n: int) -> ConcurrentRun:
        with _failing_as("PGMQ dequeue_4_consumers"):
            queue = self._fresh("concurrent")
            self._send_batches(queue, n)
            run = run_consumers(pgmq_consumer, self.conninfo, queue, n)
            row = self.conn.execute(
                "SELECT queue_length FROM pgmq.metrics(%s)", (queue,)
            ).fetchone()
        check_exact("PGMQ dequeue_4_consumers", run, n, int(row[0]) if row else 0)
        return run


# --- PgQ -----------------------------------------------------------------------------------------


class Pgq:
    """PgQ's side of one run: queues ``<prefix>_single`` and ``_batch``, consumer ``c`` on each."""

    def __init__(self, conninfo: str, prefix: str) -> None:
        self.prefix = prefix.lower()
        self.conn = psycopg.connect(peer_conninfo(conninfo, PGQ_DB))
        self.queues: list[str] = []

    def _fresh(self, name: str) -> str:
        """The run's queue ``name`` with consumer ``c``, created on first use."""
        queue = f"{self.prefix}_{name}"
        if queue not in self.queues:
            self.conn.execute("SELECT pgq.create_queue(%s)", (queue,))
            self.conn.execute("SELECT pgq.register_consumer(%s, 'c')", (queue,))
            self.conn.commit()
            self.queues.append(queue)
        return queue

    def close(self) -> None:
        try:
            self.conn.rollback()
            for queue in self.queues:
                self.conn.execute("SELECT pgq.unregister_consumer(%s, 'c')", (queue,))
                self.conn.execute("SELECT pgq.drop_queue(%s)", (queue,))
            self.conn.commit()
        finally:
            self.conn.close()

    def enqueue_single(self, n: int) -> Timing:
        with _failing_as("PgQ enqueue_single_per_txn"):
            queue = self._fresh("single")
            start = time.perf_counter()
            # Autocommit for this one, as every side's single calls: one statement, one
            # committed transaction, one round trip.
            self.conn.autocommit = True
            try:
                for _ in range(n):
                    self.conn.execute("SELECT pgq.insert_event(%s, 'm', %s)", (queue, PAYLOAD_JSON))
            finally:
                self.conn.autocommit = False
            return Timing(n, time.perf_counter() - start)

    def enqueue_batches(self, n: int) -> Timing:
        with _failing_as("PgQ enqueue_batch100"):
            queue = self._fresh("batch")
            start = time.perf_counter()
            for _ in range(n // BATCH):
                with self.conn.cursor() as cur:
                    cur.executemany(
                        "SELECT pgq.insert_event(%s, 'm', %s)", [(queue, PAYLOAD_JSON)] * BATCH
                    )
                self.conn.commit()
            return Timing(n, time.perf_counter() - start)

    def read_batches(self, n: int) -> Timing:
        """Read the ``n`` events of the batch queue as PgQ's consumers do, tick by tick."""
        queue = f"{self.prefix}_batch"
        with _failing_as("PgQ dequeue_batch_read"):
            got = 0
            start = time.perf_counter()
            while got < n:
                self.conn.execute("SELECT pgq.ticker(%s)", (queue,))
                self.conn.commit()
                row = self.conn.execute("SELECT pgq.next_batch(%s, 'c')", (queue,)).fetchone()
                batch_id = row[0] if row else None
                if batch_id is None:
                    self.conn.commit()
                    if time.perf_counter() - start > STALL_S:
                        raise BenchError(f"PgQ gave no batch with the {n - got} events left.")
                    continue
                got += len(
                    self.conn.execute(
                        "SELECT ev_id FROM pgq.get_batch_events(%s)", (batch_id,)
                    ).fetchall()
                )
                self.conn.execute("SELECT pgq.finish_batch(%s)", (batch_id,))
                self.conn.commit()
            if got != n:
                raise BenchError(f"PgQ's batches held {got} events, not the {n} inserted.")
            return Timing(n, time.perf_counter() - start)
