"""The sites suite's second PostgreSQL: a private server (the pgserver wheel's binaries, a free
loopback port) with password authentication for every role but ``postgres``, holding

- ``site_b``: migrated by this project with AQ_GLOBAL_NAME=SITE_B.LOCALHOST (a site), its
  ``aq_site`` readable by the role ``site_user``;
- ``site_c``: a copy of site_b answering as SITE_C.LOCALHOST (another site, no second migrate);
- ``plain``: an empty database (not a site).

Roles: ``site_user`` / ``site-pw`` (may read aq_site) and ``blind_user`` / ``blind-pw`` (may
connect, may not read it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.restarts.harness import ROOT, PrivatePostgres

SITE_USER, SITE_PASSWORD = "site_user", "site-pw"
BLIND_USER, BLIND_PASSWORD = "blind_user", "blind-pw"
SITE_B, SITE_C = "SITE_B.LOCALHOST", "SITE_C.LOCALHOST"

HBA = """
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


@dataclass
class SiteServer:
    pg: PrivatePostgres

    @property
    def port(self) -> int:
        return self.pg.port

    def admin(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.pg.conninfo(dbname), autocommit=True)

    def link_fields(self, **overrides: object) -> dict[str, object]:
        """A database link's input reaching site_b as site_user."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "database": "site_b",
            "username": SITE_USER,
            "password": SITE_PASSWORD,
            "sslmode": "prefer",
            **overrides,
        }


def _migrate(url: str, var_dir: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AQ_")},
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "AQ_VAR_DIR": str(var_dir),
        "AQ_GLOBAL_NAME": SITE_B,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"migrate failed:\n{done.stdout}\n{done.stderr}"


@contextmanager
def site_server() -> Iterator[SiteServer]:
    base = Path(tempfile.mkdtemp(prefix="aq-sites-"))
    base.chmod(0o755)  # pgserver's user must reach its data directory inside
    pg = PrivatePostgres(base)
    try:
        pg.init()
        (pg.data / "pg_hba.conf").write_text(HBA)
        pg.start()
        server = SiteServer(pg)
        with server.admin() as conn:
            for db in ("site_b", "plain"):
                conn.execute(f"CREATE DATABASE {db}")
            conn.execute(f"CREATE ROLE {SITE_USER} LOGIN PASSWORD '{SITE_PASSWORD}'")
            conn.execute(f"CREATE ROLE {BLIND_USER} LOGIN PASSWORD '{BLIND_PASSWORD}'")
        (base / "var").mkdir()
        _migrate(f"postgres://postgres@127.0.0.1:{pg.port}/site_b", base / "var")
        with server.admin("site_b") as conn:
            conn.execute(f"GRANT SELECT ON aq_site TO {SITE_USER}")
        with server.admin() as conn:
            conn.execute("CREATE DATABASE site_c TEMPLATE site_b")
        with server.admin("site_c") as conn:
            conn.execute("UPDATE aq_site SET global_name = %s", [SITE_C])
        yield server
    finally:
        if pg.running():
            pg.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)
