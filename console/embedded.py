"""The embedded PostgreSQL: a real PostgreSQL 16 run from the ``pgserver`` wheel.

Every process (web server, worker, beat, manage.py) calls this; pgserver shares one postmaster per
data directory, so the first caller starts it and the others attach to it.
"""

from pathlib import Path
from urllib.parse import quote


def embedded_database_url(var_dir: Path) -> str:
    import pgserver

    pgdata = Path(var_dir).resolve() / "pgdata"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    pgserver.get_server(pgdata, cleanup_mode=None)
    # pgserver listens on a Unix socket inside the data directory; a percent-encoded path as the
    # host is how dj-database-url spells a socket directory.
    return f"postgres://postgres@{quote(str(pgdata), safe='')}/postgres"
