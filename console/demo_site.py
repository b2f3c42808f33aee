"""The demo's second site: another database on the console's own PostgreSQL server (the embedded
one, or the server of DATABASE_URL), migrated by this project with its own AQ_GLOBAL_NAME and
holding one queue, so that the demo's remote propagation has somewhere to go.

It is a site like any other (spec/queues.md §2.4): the console reaches it only through the
database link the demo creates. Creating the database needs CREATEDB on the server; without it
(or when the socket directory cannot be a link's host) the demo goes on without a second site and
says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import psycopg
from django.conf import settings
from django.db import connection
from psycopg import errors, sql

from sites.provision import manage_at

QUEUE_TABLE = "SITE2_EVENTS_QT"
QUEUE = "EVENTS_IN"

# Run in the second site's own process (``manage.py demo_topology --second-site-queue``).
_MAKE_QUEUE = f"""
from queues import services as qs
from queues.models import Queue
if not Queue.objects.filter(name={QUEUE!r}).exists():
    qt = qs.queue_table_create(
        user=None, name={QUEUE_TABLE!r}, sort_order="enq_time",
        comment="Demo: events that crossed from the first site through a database link.",
    )
    qs.queue_create(
        user=None, name={QUEUE!r}, queue_table=qt,
        comment="New orders, propagated from EVENTS at the first site (EVENTS_TO_SITE2).",
    )
"""


@dataclass(frozen=True)
class SecondSite:
    host: str
    port: int
    database: str
    username: str
    password: str
    global_name: str

    @property
    def url(self) -> str:
        auth = quote(self.username, safe="")
        if self.password:
            auth += ":" + quote(self.password, safe="")
        return f"postgres://{auth}@{quote(self.host, safe='')}:{self.port}/{self.database}"


class Skipped(Exception):
    """The second site cannot be made here; the message says why."""


def second_site() -> SecondSite:
    """Where the second site lives: ``<database>_site2`` next to the console's database, named
    like this site's global name with ``_SITE2`` after its first part."""
    cfg = connection.settings_dict
    name = str(cfg["NAME"])
    database = ("aqconsole" if name == "postgres" else name)[:57] + "_site2"
    first, _, rest = str(settings.AQ_GLOBAL_NAME).partition(".")
    global_name = f"{first}_SITE2" + (f".{rest}" if rest else "")
    host = str(cfg.get("HOST") or "localhost")
    if any(c.isspace() for c in host) or "," in host or "=" in host:
        raise Skipped(f"the server's address {host!r} cannot be a database link's host")
    return SecondSite(
        host=host,
        port=int(cfg.get("PORT") or 5432),
        database=database,
        username=str(cfg.get("USER") or "postgres"),
        password=str(cfg.get("PASSWORD") or ""),
        global_name=global_name,
    )


def _manage(site: SecondSite, *args: str) -> None:
    """Run manage.py as the second site: its database, its global name."""
    done = manage_at(site.url, site.global_name, *args)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise Skipped(f"manage.py {args[0]} at the second site failed: {' '.join(tail)}")


def second_site_prepare() -> SecondSite:
    """Create the second site's database when it is missing, migrate it and give it its queue
    (each step idempotent). Skipped when the server refuses CREATE DATABASE."""
    site = second_site()
    cfg = connection.settings_dict
    try:
        with psycopg.connect(
            host=site.host,
            port=site.port,
            dbname=str(cfg["NAME"]),
            user=site.username,
            password=site.password or None,
            autocommit=True,
            connect_timeout=10,
        ) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (site.database,)
            ).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(site.database)))
    except errors.InsufficientPrivilege as exc:
        raise Skipped(
            f"{site.username} may not create the database {site.database} on this server "
            f"({' '.join(str(exc).split())}); grant CREATEDB or create it, and the next start adds it"
        ) from exc
    except psycopg.Error as exc:
        raise Skipped(f"could not create {site.database}: {' '.join(str(exc).split())}") from exc
    _manage(site, "migrate", "--noinput", "-v0")
    _manage(site, "shell", "--no-imports", "-c", _MAKE_QUEUE)
    return site
