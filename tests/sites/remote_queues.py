"""Queues at site_b for the remote propagation tests, made by this project's own services
running against site_b (a `manage.py shell` subprocess: the remote is the same codebase), and
the grants the link's role needs there to enqueue (Oracle's ENQUEUE through the link's user)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from typing import Any

import psycopg

from tests.restarts.harness import ROOT
from tests.sites.helpers import SITE_B, SITE_USER, SiteServer

ORDER_SCHEMA = {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}

_MAKE = f"""
from queues import services as qs
from queues.models import Queue
if not Queue.objects.filter(name="REMOTE_IN").exists():
    qt = qs.queue_table_create(user=None, name="QT_REMOTE_IN", sort_order="enq_time")
    qs.queue_create(user=None, name="REMOTE_IN", queue_table=qt)
    qt = qs.queue_table_create(
        user=None, name="QT_REMOTE_TYPED", sort_order="enq_time", payload_type="ORDER",
        payload_schema={ORDER_SCHEMA!r},
    )
    qs.queue_create(user=None, name="REMOTE_TYPED", queue_table=qt)
"""


def remote_queues(server: SiteServer, dbname: str = "site_b", global_name: str = SITE_B) -> None:
    """REMOTE_IN (ANY, single consumer) and REMOTE_TYPED (ORDER) at site_b (or at ``dbname``,
    the site ``global_name`` of the same server); idempotent."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AQ_")},
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{server.port}/{dbname}",
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "AQ_GLOBAL_NAME": global_name,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", _MAKE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"making the remote queues failed:\n{done.stderr}"
    with server.admin(dbname) as conn:
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {SITE_USER}"
        )
        conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {SITE_USER}")


def remote_payloads(server: SiteServer, queue: str, tag: str) -> list[Any]:
    """Payloads of ``queue`` at site_b whose ``tag`` key is ``tag``, in enqueue order."""
    with server.admin("site_b") as conn:
        rows = conn.execute(
            "SELECT m.payload FROM aq_message m JOIN queues_queue q ON q.id = m.queue_id "
            "WHERE q.name = %s AND m.payload->>'tag' = %s ORDER BY m.id",
            (queue, tag),
        ).fetchall()
    return [r[0] for r in rows]


def remote_receipts(server: SiteServer, stream: str) -> int:
    with server.admin("site_b") as conn:
        return conn.execute(
            "SELECT count(*) FROM aq_propagation_receipt WHERE stream = %s", (stream,)
        ).fetchone()[0]


def site_b_conn(server: SiteServer) -> psycopg.Connection:
    return psycopg.connect(server.pg.conninfo("site_b"))


def remote_seqs(server: SiteServer, queue: str, tag: str, dbname: str = "site_b") -> Counter:
    """How many copies of each ``seq`` (payload key) tagged ``tag`` ``queue`` holds at the site
    ``dbname``, in any state: the crash tests' exact count."""
    with server.admin(dbname) as conn:
        rows = conn.execute(
            "SELECT (m.payload->>'seq')::int FROM aq_message m "
            "JOIN queues_queue q ON q.id = m.queue_id WHERE q.name = %s AND m.payload->>'tag' = %s",
            (queue, tag),
        ).fetchall()
    return Counter(r[0] for r in rows)
