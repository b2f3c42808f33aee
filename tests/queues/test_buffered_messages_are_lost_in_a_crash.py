"""A database crash loses the buffered messages still in the buffer and keeps the rest, as an
instance failure does in AQ: on a private PostgreSQL (the pgserver wheel) the test owns, persistent
and buffered messages are enqueued, one buffered message is spilled by the queue monitor, the
postmaster and its children are killed with SIGKILL, and the server starts again with crash
recovery, which resets UNLOGGED relations (the queue tables' buffer leaves ``aq_qt{id}_b`` and
``aq_qt{id}_cb``, and the buffer's counters) to empty."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.restarts.harness import ROOT, PrivatePostgres, wait_until

pgserver = pytest.importorskip("pgserver")

SCRIPT = """
import json
import psycopg
from queues import engine, services
qt = services.queue_table_create(user=None, name="QT_CRASH")
services.queue_create(user=None, name="CRASH", queue_table=qt)
put = lambda p, **kw: services.message_enqueue(
    user=None, queue="CRASH", messages=[engine.NewMessage(payload=p)], **kw)
ids = {"persistent": put("p1") + put("p2")}
ids["spilled"] = put("spilled", delivery_mode="BUFFERED")
mqt = services.queue_table_create(user=None, name="QT_CRASH_M", multiple_consumers=True)
mq = services.queue_create(user=None, name="CRASH_M", queue_table=mqt)
for name in ("S1", "S2"):
    services.subscriber_add(user=None, queue=mq, name=name)
mput = lambda p: services.message_enqueue(
    user=None, queue="CRASH_M", messages=[engine.NewMessage(payload=p)], delivery_mode="BUFFERED")
ids["m_spilled"] = mput("m_spilled")
engine.buffered.configure(spill_after_s=0)
with psycopg.connect(services.conninfo()) as conn:
    assert engine.buffered.spill(conn) == 2
    conn.commit()
engine.buffered.configure()
ids["in_buffer"] = put("b1", delivery_mode="BUFFERED") + put("b2", delivery_mode="BUFFERED")
ids["m_in_buffer"] = mput("m_b1")
print(json.dumps(ids))
"""


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The command name is in parentheses and may hold spaces: the ppid follows it.
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                out.append(int(entry.name))
    return out


def _unlogged_leaves(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute(
        """
        SELECT c.relname FROM pg_partition_tree('aq_message') t JOIN pg_class c ON c.oid = t.relid
        WHERE c.relpersistence = 'u'
        UNION ALL
        SELECT c.relname FROM pg_partition_tree('aq_message_consumer') t
        JOIN pg_class c ON c.oid = t.relid WHERE c.relpersistence = 'u'
        """
    ).fetchall()
    return {r[0] for r in rows}


def test_a_crash_loses_unspilled_buffered_messages_and_keeps_the_others() -> None:
    base = Path(tempfile.mkdtemp(prefix="aq-buffered-crash-"))
    base.chmod(0o755)  # pgserver's user must reach its data directory inside
    pg = PrivatePostgres(base)
    try:
        pg.init()
        pg.start()
        with psycopg.connect(pg.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE aq")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AQ_")},
            "DATABASE_URL": pg.url,
            "DJANGO_SETTINGS_MODULE": "console.settings",
            "AQ_VAR_DIR": str(base / "var"),
        }
        (base / "var").mkdir()

        def manage(*args: str) -> str:
            done = subprocess.run(
                [sys.executable, "manage.py", *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
                stdin=subprocess.DEVNULL,
            )
            assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout}\n{done.stderr}"
            return done.stdout

        manage("migrate", "--noinput", "-v0")
        ids = json.loads(manage("shell", "--no-imports", "-c", SCRIPT).strip().splitlines()[-1])

        # The crash: the postmaster and every child at once, no shutdown checkpoint.
        postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
        victims = [postmaster, *_children(postmaster)]
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not any(Path(f"/proc/{p}").exists() for p in victims), 10)
        pg.start()  # the stale postmaster.pid makes this a crash recovery
        assert wait_until(pg.answers, 30)
        assert "database system was interrupted" in pg.log.read_text()

        with psycopg.connect(pg.conninfo()) as conn:

            def present(key: str) -> list[tuple]:
                return conn.execute(
                    "SELECT payload #>> '{}', delivery_mode, in_buffer FROM aq_message "
                    "WHERE id = ANY(%s) ORDER BY id",
                    (ids[key],),
                ).fetchall()

            assert present("persistent") == [
                ("p1", "PERSISTENT", False),
                ("p2", "PERSISTENT", False),
            ]
            assert present("spilled") == [("spilled", "BUFFERED", False)]
            (qt,) = conn.execute(
                "SELECT id FROM queues_queuetable WHERE name = 'QT_CRASH'"
            ).fetchone()
            assert {f"aq_qt{qt}_b", f"aq_qt{qt}_cb"} <= _unlogged_leaves(conn)
            assert present("in_buffer") == []
            assert present("m_in_buffer") == []
            # The spilled multi-consumer message moved with both consumer copies.
            assert present("m_spilled") == [("m_spilled", "BUFFERED", False)]
            copies = conn.execute(
                "SELECT count(*) FILTER (WHERE NOT in_buffer), count(*) FROM aq_message_consumer"
            ).fetchone()
            assert copies == (2, 2)
            # The buffer's counters went with it; the spilled message keeps its queue listed.
            rows = conn.execute(
                "SELECT queue_name, num_msgs, spill_msgs, cnum_msgs FROM v_buffered_queues "
                "ORDER BY queue_name"
            ).fetchall()
            assert rows == [("CRASH", 1, 1, 0), ("CRASH_M", 1, 1, 0)]
    finally:
        if pg.running():
            with contextlib.suppress(Exception):  # the server may be down already
                pg.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)
