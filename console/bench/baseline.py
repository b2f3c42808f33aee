"""``--baseline``: the physical limit of the same server for each shape of work, on plain tables
with only a primary key (``id identity, payload jsonb, enq_time timestamptz``), created under the
run's prefix and dropped afterwards.

As the engine does, each pair of workloads gets a table with no history: ``single`` (single-row
INSERT commits, then single-row DELETE ... SKIP LOCKED commits draining them), ``batch`` (COPY in
batches of 100, then DELETE ... SKIP LOCKED of 100), ``concurrent`` (loaded untimed, then four
consumer processes each deleting one row per committed transaction), and ``unlogged``, a plain
UNLOGGED table, the limit of what a buffered (no WAL) message can do.
"""

from __future__ import annotations

import time

import psycopg

from console.bench.consumers import ConcurrentRun, Take, check_exact, run_consumers
from console.bench.workload import BATCH, PAYLOAD_JSON, BenchError, Timing


def _take_sql(table: str) -> str:
    # The shape of a queue's dequeue: the head row in order, skipping rows other consumers hold.
    return (
        f"WITH c AS (SELECT id FROM {table} ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
        f"DELETE FROM {table} t USING c WHERE t.id = c.id RETURNING t.id, t.payload"
    )


def _single_take_sql(table: str) -> str:
    return (
        f"DELETE FROM {table} WHERE id = (SELECT id FROM {table} ORDER BY id "
        f"FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, payload"
    )


def plain_consumer(conn: psycopg.Connection, table: str) -> Take:
    """Opener of a ``baseline_delete_4_consumers`` consumer (runs in the child process)."""
    sql = _single_take_sql(table)
    conn.autocommit = True  # one DELETE, one committed transaction

    def take() -> int | None:
        row = conn.execute(sql, prepare=True).fetchone()
        conn.commit()
        return int(row[0]) if row else None

    return take


class PlainTables:
    """The plain tables of one run; :meth:`drop` removes them, whatever happened."""

    def __init__(self, conninfo: str, prefix: str) -> None:
        self.conninfo = conninfo
        self.prefix = prefix.lower()
        # Autocommit: each single-row statement is its own committed transaction in one round
        # trip, as the engine's and PGMQ's single calls are measured; a COPY of 100 is one too.
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.tables: list[str] = []

    def _table(self, name: str, *, unlogged: bool = False) -> str:
        """The run's table ``name``, created on first use."""
        table = f"{self.prefix}_plain_{name}"
        if table in self.tables:
            return table
        self.conn.execute(
            f"CREATE {'UNLOGGED ' if unlogged else ''}TABLE {table} ("
            "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "payload jsonb NOT NULL, enq_time timestamptz NOT NULL DEFAULT now())"
        )
        self.conn.commit()
        self.tables.append(table)
        return table

    def drop(self) -> None:
        try:
            self.conn.rollback()
            for table in self.tables:
                self.conn.execute(f"DROP TABLE IF EXISTS {table}")
            self.conn.commit()
        finally:
            self.conn.close()

    # --- single-row commits -------------------------------------------------------------------

    def insert_single(self, n: int, *, unlogged: bool = False) -> Timing:
        table = self._table("unlogged" if unlogged else "single", unlogged=unlogged)
        insert = f"INSERT INTO {table} (payload) VALUES (%s)"
        start = time.perf_counter()
        for _ in range(n):
            self.conn.execute(insert, (PAYLOAD_JSON,), prepare=True)
            self.conn.commit()
        return Timing(n, time.perf_counter() - start)

    def delete_single(self, n: int, *, unlogged: bool = False) -> Timing:
        """Drain the ``n`` rows :meth:`insert_single` wrote, one per committed transaction."""
        table = f"{self.prefix}_plain_{'unlogged' if unlogged else 'single'}"
        take = _take_sql(table)
        start = time.perf_counter()
        for i in range(n):
            got = self.conn.execute(take, (1,), prepare=True).fetchall()
            self.conn.commit()
            if len(got) != 1:
                raise BenchError(f"The plain table {table} was empty after {i} of {n} rows.")
        return Timing(n, time.perf_counter() - start)

    # --- batches of 100 -----------------------------------------------------------------------

    def copy_batches(self, n: int) -> Timing:
        table = self._table("batch")
        start = time.perf_counter()
        self._copy(table, n)
        return Timing(n, time.perf_counter() - start)

    def _copy(self, table: str, n: int) -> None:
        for start in range(0, n, BATCH):
            with self.conn.cursor().copy(f"COPY {table} (payload) FROM STDIN") as copy:
                for _ in range(min(BATCH, n - start)):
                    copy.write_row((PAYLOAD_JSON,))
            self.conn.commit()

    def delete_batches(self, n: int) -> Timing:
        table = f"{self.prefix}_plain_batch"
        take = _take_sql(table)
        start = time.perf_counter()
        for i in range(n // BATCH):
            got = self.conn.execute(take, (BATCH,), prepare=True).fetchall()
            self.conn.commit()
            if len(got) != BATCH:
                raise BenchError(f"Batch {i} of the plain table's delete returned {len(got)} rows.")
        return Timing(n, time.perf_counter() - start)

    # --- four consumers -----------------------------------------------------------------------

    def delete_concurrent(self, n: int) -> ConcurrentRun:
        """Load ``n`` rows (untimed), then four processes take them one per transaction; the
        figure is given only if every row went to exactly one of them."""
        table = self._table("concurrent")
        self._copy(table, n)
        run = run_consumers(plain_consumer, self.conninfo, table, n)
        row = self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        self.conn.commit()
        check_exact("baseline_delete_4_consumers", run, n, int(row[0]) if row else 0)
        return run
