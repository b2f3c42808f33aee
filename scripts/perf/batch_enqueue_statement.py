"""Batch enqueue (issue 13): the engine's set-based statement for 100 plain payloads against the
shapes it replaced, interleaved as in ``engine_hot_path.py`` (compare within one run only).

Variants, each a committed statement of 100 messages: ``engine.enqueue`` as the benchmark calls
it; the statement as the engine sends it (payloads as one jsonb array, no records, the counter's
UPDATE); the same with the payloads read as json and each cast to jsonb; the same with every
optional property sent as a record (the layout before 2026-11-28); a plain table's INSERT of 100
from one jsonb array. Usage, from the worktree with DATABASE_URL:

    python scripts/perf/batch_enqueue_statement.py [--n 600] [--chunk 20]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from engine_hot_path import Op, interleaved, report, scratch_queue

from console.bench.workload import BATCH, PAYLOAD, PAYLOAD_JSON
from core.storable import encode_json
from queues import engine

enq_mod = sys.modules["queues.engine.enqueue"]


def variants(conn: psycopg.Connection, info: engine.QueueInfo) -> dict[str, Op]:
    msgs = [engine.NewMessage(payload=PAYLOAD) for _ in range(BATCH)]
    engine.enqueue(conn, info, msgs)  # this backend's counter row: later statements UPDATE it
    conn.commit()
    shape = {"by_priority": info.by_priority, "commit_time": info.commit_time}
    plain_sql = enq_mod._enqueue_sql(info.queue_table_id, False, counter_row=True, **shape)
    params = {
        "qid": info.id,
        "payloads": "[" + ",".join([PAYLOAD_JSON] * BATCH) + "]",
        "n": BATCH,
        "user": "",
        "channel": info.channel,
    }
    as_json = plain_sql.replace(
        "jsonb_array_elements(%(payloads)s::jsonb)", "json_array_elements(%(payloads)s::json)"
    ).replace("m.payload, now()", "m.payload::jsonb, now()")
    # Every property sent, at its default value, in every record.
    record = {
        "pri": 1, "delay": 0.0, "exp": None, "corr": "", "sender": "", "headers": {},
        "kind": "USER", "tname": "",
    }  # fmt: skip
    records_sql = enq_mod._enqueue_sql(
        info.queue_table_id, False, given=frozenset(record), counter_row=True, **shape
    )
    records = {**params, "msgs": encode_json([record] * BATCH)}
    conn.execute("DROP TABLE IF EXISTS perf_plain_batch")
    conn.execute(
        "CREATE TABLE perf_plain_batch (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "payload jsonb NOT NULL, enq_time timestamptz NOT NULL DEFAULT now())"
    )
    conn.commit()

    def sql_op(sql: str, p: dict) -> Op:
        return lambda c: c.execute(sql, p, prepare=True).fetchall() and None

    return {
        "engine.enqueue of 100 (as bench)": lambda c: engine.enqueue(c, info, msgs) and None,
        "statement: jsonb payloads, no records": sql_op(plain_sql, params),
        "statement: json payloads, each cast": sql_op(as_json, params),
        "statement: every property a record": sql_op(records_sql, records),
        "plain table INSERT of 100 (jsonb array)": sql_op(
            "INSERT INTO perf_plain_batch (payload) "
            "SELECT p FROM jsonb_array_elements(%(payloads)s::jsonb) p RETURNING id",
            params,
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600, help="batches per variant")
    ap.add_argument("--chunk", type=int, default=20)
    args = ap.parse_args()
    with scratch_queue("PERFB") as (conn, info):
        ops = variants(conn, info)
        print(f"load average before: {os.getloadavg()}")
        report(
            f"batches of {BATCH}, one committed txn each, {args.n} per variant in chunks of "
            f"{args.chunk} (batches/s)",
            interleaved(conn, ops, args.n, args.chunk),
        )
        print(f"load average after: {os.getloadavg()}")
        conn.execute("DROP TABLE IF EXISTS perf_plain_batch")
        conn.commit()


if __name__ == "__main__":
    main()
