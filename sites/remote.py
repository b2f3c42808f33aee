"""Connections to other sites: the one place that opens them.

Creating and testing a database link use :func:`probe`; the propagation to ``QUEUE@LINK`` opens
its connections with :func:`connect` (``link_endpoint(link)`` gives the endpoint with the
decrypted password). Every refusal becomes a :class:`RemoteError` naming the link's field at
fault (password, username, database, host, port, sslmode, sslrootcert) with libpq's own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING

import psycopg
from django.conf import settings
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from core import crypto
from sites.naming import global_name_problem

if TYPE_CHECKING:
    from sites.models import DatabaseLink

APPLICATION_NAME = "aq-console database link"
SITE_TABLE = "aq_site"  # sites.models.LocalSite's table: its presence makes a database a site


class RemoteError(Exception):
    """The remote site refused or could not be reached; ``field`` names the link's input."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    database: str
    username: str
    # Decrypted: kept out of repr, so a logged endpoint never shows it.
    password: str = dataclass_field(default="", repr=False)
    sslmode: str = "prefer"
    sslrootcert: str = ""

    def conninfo(self, *, connect_timeout: int | None = None) -> str:
        timeout = connect_timeout or settings.AQ_SITE_CONNECT_TIMEOUT_S
        return make_conninfo(
            host=self.host,
            port=str(self.port),
            dbname=self.database,
            user=self.username,
            password=self.password or None,
            sslmode=self.sslmode,
            sslrootcert=self.sslrootcert or None,
            connect_timeout=str(timeout),
            application_name=APPLICATION_NAME,
            # A hung site fails the batch instead of holding its source rows (settings.py).
            options=f"-c statement_timeout={int(settings.AQ_SITE_STATEMENT_TIMEOUT_S * 1000)}",
            keepalives="1",
            keepalives_idle="5",
            keepalives_interval="2",
            keepalives_count="3",
        )

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}/{self.database}"


@dataclass(frozen=True)
class SiteInfo:
    global_name: str
    server_version: str


def link_endpoint(link: DatabaseLink) -> Endpoint:
    """The link's endpoint with its password decrypted (ValueError when the key changed)."""
    return Endpoint(
        host=link.host,
        port=link.port,
        database=link.database,
        username=link.username,
        password=crypto.decrypt(link.password_encrypted),
        sslmode=link.sslmode,
        sslrootcert=link.sslrootcert,
    )


# libpq's words for each refusal, and the link field it is about. Checked in order.
_CONNECT_FAULTS: tuple[tuple[str, str], ...] = (
    ("password authentication failed", "password"),
    ("no password supplied", "password"),
    ("fe_sendauth", "password"),
    ("no pg_hba.conf entry", "username"),  # before 'database "': it names the database too
    ('database "', "database"),  # database "x" does not exist
    ('role "', "username"),  # role "x" does not exist
    ("root certificate", "sslrootcert"),
    ("ssl", "sslmode"),
    ("connection refused", "port"),
)


def _connect_fault(exc: psycopg.Error, endpoint: Endpoint) -> RemoteError:
    text = " ".join(str(exc).split())
    text = text.removeprefix("connection failed: ")
    lowered = text.lower()
    field = next((f for words, f in _CONNECT_FAULTS if words in lowered), "host")
    if field in ("host", "port"):
        text = f"The site at {endpoint.host}:{endpoint.port} cannot be reached: {text}"
    elif field == "password":
        # With password authentication PostgreSQL does not say whether the role exists.
        text = f"The site refused the password of {endpoint.username} (or has no such role): {text}"
    return RemoteError(text, field=field)


def connect(
    endpoint: Endpoint, *, autocommit: bool = True, read_timeout_s: int | None = None
) -> psycopg.Connection:
    """A new connection to the site (the caller closes it); RemoteError when refused.

    ``read_timeout_s`` makes a read-only connection for pages that read the site (the topology
    graph, "trace a message"): that connect timeout, statement timeout and TCP user timeout, so
    a slow or vanished site costs a page that long, never a hang."""
    conninfo = endpoint.conninfo()
    if read_timeout_s is not None:
        ms = read_timeout_s * 1000
        conninfo = make_conninfo(
            endpoint.conninfo(connect_timeout=read_timeout_s),
            options=f"-c statement_timeout={ms} -c default_transaction_read_only=on",
            tcp_user_timeout=str(ms),
        )
    try:
        return psycopg.connect(conninfo, autocommit=autocommit)
    except psycopg.Error as exc:
        raise _connect_fault(exc, endpoint) from exc


def read_site(conn: psycopg.Connection, endpoint: Endpoint) -> SiteInfo:
    """The site's global name from its ``aq_site`` row: RemoteError naming ``database`` when the
    database has no such table (not a site: never migrated by this project) or no row, and
    naming ``username`` when the link's role may not read it."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT to_regclass(%s) IS NOT NULL", [SITE_TABLE])
            if not cur.fetchone()[0]:  # type: ignore[index]
                raise RemoteError(
                    f"Database {endpoint.database} at {endpoint.host}:{endpoint.port} is not a "
                    f"site: it has no {SITE_TABLE} table (run this project's migrate there).",
                    field="database",
                )
            cur.execute(sql.SQL("SELECT global_name FROM {}").format(sql.Identifier(SITE_TABLE)))
            row = cur.fetchone()
            version = str(conn.info.parameter_status("server_version") or "")
    except errors.InsufficientPrivilege as exc:
        raise RemoteError(
            f"Role {endpoint.username} may not read the site's {SITE_TABLE} there: "
            f"GRANT SELECT ON {SITE_TABLE} TO {endpoint.username}. ({exc})",
            field="username",
        ) from exc
    except psycopg.OperationalError as exc:
        raise _connect_fault(exc, endpoint) from exc
    if row is None:
        raise RemoteError(
            f"Database {endpoint.database} is not a site: its {SITE_TABLE} row is missing "
            "(run this project's migrate there).",
            field="database",
        )
    name = str(row[0])
    if problem := global_name_problem(name):
        raise RemoteError(
            f"The site's global name {name!r} is not usable: {problem}", field="database"
        )
    return SiteInfo(global_name=name, server_version=version)


def probe(endpoint: Endpoint) -> SiteInfo:
    """Connect, check that the database is a site, read its global name, disconnect."""
    with connect(endpoint) as conn:
        return read_site(conn, endpoint)
