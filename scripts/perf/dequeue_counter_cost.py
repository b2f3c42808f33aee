"""What the persistent dequeue counter costs the server (issue 13): the engine's single REMOVE
statement as it is (an UPDATE of this backend's ``aq_queue_stat`` row), without the counter, and
with the counter written as an append-only row of an unindexed table instead (a design the engine
does not use; see docs/BENCHMARKS.md "Issue 13: the runs of 2026-11-29").

Server-side only: pgbench runs the three statements interleaved at random in one session
(``-f a@1 -f b@1 -f c@1``, synchronous_commit off so the disk does not hide the CPU), so the
machine's drift falls on all three alike, and prints each one's mean latency. The statements are
the engine's own text (``dequeue._take_sql``), with the queue id and batch size as literals. A
scratch queue table ``CNT_<pid>_QT`` is filled with ``--rows`` READY messages and dropped at the
end, with the log table. Usage, from the worktree with DATABASE_URL (pgbench on PATH):

    python scripts/perf/dequeue_counter_cost.py [--rows 200000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_hot_path import PAYLOAD_JSON, engine, scratch_queue
from storage_ceilings import LEAF_COLUMNS

from queues.engine.types import PERSISTENT

dq = sys.modules["queues.engine.dequeue"]
rows_mod = sys.modules["queues.engine.rows"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--seconds", type=int, default=20)
    args = ap.parse_args()
    with scratch_queue("CNT") as (conn, info):
        where, _ = rows_mod._candidate_filter(
            info, correlation=None, msgid=None, after=None, delivery_mode=PERSISTENT
        )
        first, sql = (
            dq._take_sql(
                info.messages, info.consumers, where, engine.REMOVE, retain=False, copies=False,
                delivery_mode=PERSISTENT, counter_row=row,
            ).replace("%(qid)s", str(info.id)).replace("%(n)s", "1").replace("%%", "%")
            for row in (False, True)
        )  # fmt: skip
        head, _, _ = sql.partition(", stat AS (")
        log = f"aq_perf_counter_log_{info.id}"
        variants = {
            "without the counter": f"{head} SELECT *, true FROM d;",
            # As the engine does: its first call in a backend makes the counter row (an upsert),
            # every later one UPDATEs it (sets.COUNTER_ROWS).
            "the engine's (UPDATE of the counter row)": (
                f"\\if :counted\n{sql};\n\\else\n{first};\n\\set counted 1\n\\endif"
            ),
            "an unindexed append-only counter row": (
                f"{head}, stat AS (INSERT INTO {log} (queue_id, dequeued) "
                f"SELECT {info.id}, count(*) FROM d HAVING count(*) > 0 RETURNING 1) "
                "SELECT *, EXISTS (SELECT FROM stat) FROM d;"
            ),
        }
        values = ", ".join(["%s"] * len(LEAF_COLUMNS.split(",")))
        conn.execute(
            f"INSERT INTO {info.messages} ({LEAF_COLUMNS}) SELECT {values} "
            "FROM generate_series(1, %s)",
            (info.id, info.queue_table_id, "READY", 1, 0, 0, "USER", "", "", "", "{}",
             PAYLOAD_JSON, "now", "", 0, 0, "", False, PERSISTENT, False, args.rows),
        )  # fmt: skip
        conn.execute(
            f"CREATE TABLE {log} (queue_id bigint NOT NULL, enqueued bigint NOT NULL DEFAULT 0, "
            "dequeued bigint NOT NULL DEFAULT 0)"
        )
        conn.commit()
        conn.autocommit = True
        conn.execute(f"VACUUM ANALYZE {info.messages}")
        try:
            with tempfile.TemporaryDirectory() as tmp:
                files = []
                for i, text in enumerate(variants.values()):
                    path = Path(tmp) / f"v{i}.sql"
                    path.write_text(text + "\n")
                    files += ["-f", f"{path}@1"]
                pg = conn.pgconn
                out = subprocess.run(
                    ["pgbench", "-n", "-M", "prepared", "-c", "1", "-T", str(args.seconds),
                     "-D", "counted=0",
                     *files, "-h", pg.host.decode(), "-p", pg.port.decode(),
                     "-U", pg.user.decode(), pg.db.decode()],
                    env={"PGOPTIONS": "-c synchronous_commit=off", "PATH": "/usr/bin:/bin"},
                    capture_output=True, text=True, check=True,
                ).stdout  # fmt: skip
            latencies = [
                line.split("=")[1].strip()
                for line in out.splitlines()
                if line.startswith(" - latency average")
            ]
            print(f"single REMOVE dequeue, server only, {args.seconds} s interleaved:")
            for name, latency in zip(variants, latencies, strict=True):
                print(f"  {name:<44} {latency}")
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {log}")


if __name__ == "__main__":
    main()
