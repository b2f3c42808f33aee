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
# Destinations of the queue-to-dblink tests (several queues at one site).
if not Queue.objects.filter(name="REMOTE_A").exists():
    qt = qs.queue_table_create(user=None, name="QT_REMOTE_MORE", sort_order="enq_time")
    for name in ("REMOTE_A", "REMOTE_B", "REMOTE_Q"):
        qs.queue_create(user=None, name=name, queue_table=qt)
"""


def run_at_site_b(
    server: SiteServer, code: str, what: str, dbname: str = "site_b", global_name: str = SITE_B
) -> None:
    """Run ``code`` in a ``manage.py shell`` whose database is site_b (or ``dbname``, the site
    ``global_name`` of the same server): this project's own services, as that site runs them."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AQ_")},
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{server.port}/{dbname}",
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "AQ_GLOBAL_NAME": global_name,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{what} failed:\n{done.stderr}"


def remote_queues(server: SiteServer, dbname: str = "site_b", global_name: str = SITE_B) -> None:
    """REMOTE_IN (ANY, single consumer), REMOTE_TYPED (ORDER) and REMOTE_A, REMOTE_B and
    REMOTE_Q (ANY, single consumer) at site_b (or at ``dbname``, the site ``global_name`` of the
    same server); idempotent."""
    run_at_site_b(server, _MAKE, "making the remote queues", dbname, global_name)
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


_MAKE_HUB = """
from jobs import services as js
from jobs.models import Propagation
from queues import services as qs
from queues.models import Queue
from rules import services as rs
from sites.models import DatabaseLink
if not Queue.objects.filter(name="B_HUB").exists():
    qt = qs.queue_table_create(
        user=None, name="QT_B_HUB", sort_order="enq_time", multiple_consumers=True
    )
    hub = qs.queue_create(user=None, name="B_HUB", queue_table=qt)
    dest = qs.queue_create(user=None, name="B_LOCAL", queue_table=qt)
    eu = rs.rule_set_create(user=None, name="B_ONLY_EU")
    rule = rs.rule_create(user=None, name="B_ONLY_EU_R0", condition=":msg.region = 'EU'")
    rs.rule_set_add_rule(user=None, rule_set=eu, rule=rule)
    js.propagation_create(
        user=None, name="B_HUB_TO_LOCAL", source_queue=hub, destination_queue=dest,
        positive_rule_set=eu,
    )
    # The link back to A is written as rows: reading B's topology needs only its name and the
    # global name it reaches (A's test database is not visible to this process).
    DatabaseLink.objects.create(
        name="BACK_TO_A", host="127.0.0.1", port=1, database="a", username="nobody",
        remote_global_name={a!r},
    )
    sub = qs.subscriber_add(user=None, queue=hub, name="B_HUB_TO_A", address="SRC@BACK_TO_A")
    Propagation.objects.create(
        name="B_HUB_TO_A", source_queue=hub, destination_dblink="BACK_TO_A",
        destination_remote_queue="SRC", subscriber=sub,
    )
"""


def remote_hub(server: SiteServer, a_global_name: str) -> None:
    """At site_b (idempotent): B_HUB (multi-consumer) with B_HUB_TO_LOCAL → B_LOCAL (positive
    rule set B_ONLY_EU: ``:msg.region = 'EU'``) and B_HUB_TO_A → SRC@BACK_TO_A, a link at B
    whose site is ``a_global_name`` (the test's own site): A → B → A."""
    remote_queues(server)
    run_at_site_b(server, _MAKE_HUB.replace("{a!r}", repr(a_global_name)), "making B_HUB")
    with server.admin("site_b") as conn:
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {SITE_USER}")


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
