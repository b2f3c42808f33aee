"""A directed network on the private server for the origin/route/loop tests: this project's
services run at site_b and site_c (``manage.py shell`` subprocesses with DATABASE_URL and
AQ_GLOBAL_NAME pointing there: the remote is the same codebase), and what their queues and runs
hold, read with plain SQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.restarts.harness import ROOT
from tests.sites.helpers import SITE_B, SITE_C, SITE_USER, SiteServer

NAMES = {"site_b": SITE_B, "site_c": SITE_C}


def site_shell(server: SiteServer, db: str, code: str, **env: str) -> str:
    """Run ``code`` in ``manage.py shell`` against ``db`` (site_b or site_c) as that site;
    returns its standard output. A failure fails the test with the site's traceback."""
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AQ_")},
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{server.port}/{db}",
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "AQ_GLOBAL_NAME": NAMES[db],
        **env,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{db} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def grant_link_user(server: SiteServer, db: str) -> None:
    """What the link's role needs at ``db`` to enqueue there (as tests/sites/remote_queues.py)."""
    with server.admin(db) as conn:
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {SITE_USER}"
        )
        conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {SITE_USER}")


MAKE_QUEUE = """
from queues import services as qs
from queues.models import Queue
if not Queue.objects.filter(name={name!r}).exists():
    qt = qs.queue_table_create(user=None, name="QT_" + {name!r}, sort_order="enq_time",
                               multiple_consumers={multi!r})
    qs.queue_create(user=None, name={name!r}, queue_table=qt)
"""


def make_queue_at(server: SiteServer, db: str, name: str, *, multi: bool) -> None:
    site_shell(server, db, MAKE_QUEUE.format(name=name, multi=multi))
    grant_link_user(server, db)


RUN = """
import json
from django.db import transaction
from jobs import runner, services as js
from jobs.models import Propagation, PropagationRun
from queues import services as qs
p = Propagation.objects.get(name={name!r})
js.propagation_dispatch(send=False)
transaction.get_connection().close()  # the runner uses its own sessions
out = [runner.execute(r.pk, conninfo=qs.conninfo(), worker="site", pid=0)
       for r in PropagationRun.objects.filter(propagation=p, state="QUEUED")]
print("RESULT" + json.dumps(out))
"""


def run_at(server: SiteServer, db: str, name: str) -> list[str]:
    """Run propagation ``name`` of site ``db`` for one short window there (as run_now does)."""
    out = site_shell(
        server,
        db,
        RUN.format(name=name),
        AQ_PROPAGATION_SLICE_S="0.3",
        AQ_PROPAGATION_HEARTBEAT_S="0.1",
    )
    line = next(x for x in out.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT") :])


def messages_at(server: SiteServer, db: str, queue: str) -> list[tuple[Any, ...]]:
    """``(n, tag hex, origin_site, route)`` of every message of ``queue`` at ``db`` (any
    state), in enqueue order; ``n`` is the change record's new value N."""
    with server.admin(db) as conn:
        return conn.execute(
            "SELECT (m.payload->'new_values'->>'N')::int, encode(m.tag, 'hex'), m.origin_site, "
            "m.route FROM aq_message m JOIN queues_queue q ON q.id = m.queue_id "
            "WHERE q.name = %s ORDER BY m.id",
            (queue,),
        ).fetchall()


def run_totals(server: SiteServer, db: str, name: str) -> tuple[int, int]:
    """(propagated, discarded) over every run of propagation ``name`` at ``db``."""
    with server.admin(db) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(r.propagated), 0), coalesce(sum(r.discarded), 0) "
            "FROM jobs_propagationrun r JOIN jobs_propagation p ON p.id = r.propagation_id "
            "WHERE p.name = %s",
            (name,),
        ).fetchone()
    return int(row[0]), int(row[1])
