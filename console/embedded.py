"""The embedded PostgreSQL: a real PostgreSQL 16 run from the ``pgserver`` wheel.

Every process (web server, worker, beat, manage.py) calls :func:`embedded_database_url`; pgserver
shares one postmaster per data directory, so the first caller starts it and the others attach to it.
``cleanup_mode=None`` means no process stops the server when it exits, so a manage.py run that ends
never pulls the database from under the web server or the worker; ``scripts/run-console.sh`` stops
it with :func:`embedded_stop` once all of its processes are gone.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from urllib.parse import quote


def _pgdata(var_dir: Path) -> Path:
    return Path(var_dir).resolve() / "pgdata"


def _import_pgserver():  # type: ignore[no-untyped-def]
    # platformdirs warns on import when XDG_RUNTIME_DIR is unset (it is, under root and CI);
    # the fallback it picks (/tmp/runtime-<uid>) is fine for pgserver's lock file.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pgserver
    return pgserver


def _postmaster_pid(pgdata: Path) -> int | None:
    """The running postmaster's pid from ``postmaster.pid``, or None if it is not running."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    try:
        name = psutil.Process(pid).name()
    except psutil.Error:
        return None
    # After a reboot the pid in a stale postmaster.pid may belong to another program; pgserver
    # would then believe the server runs and never start it.
    return pid if name.startswith("postgres") else None


def embedded_running(var_dir: Path) -> bool:
    return _postmaster_pid(_pgdata(var_dir)) is not None


def embedded_database_url(var_dir: Path) -> str:
    pgdata = _pgdata(var_dir)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists() and _postmaster_pid(pgdata) is None:
        pid_file.unlink(missing_ok=True)  # stale: let pgserver start a fresh postmaster
    server = _import_pgserver().get_server(pgdata, cleanup_mode=None)
    # pgserver listens only on a Unix socket: in the data directory, or under the runtime
    # directory when that path is too long for a socket. A percent-encoded directory as the host
    # is how dj-database-url spells a socket directory.
    socket_dir = server.get_postmaster_info().socket_dir or pgdata
    return f"postgres://postgres@{quote(str(socket_dir), safe='')}/postgres"


def embedded_stop(var_dir: Path) -> bool:
    """Stop the embedded server if it runs (fast shutdown: open sessions are ended).
    Returns whether there was one to stop."""
    pgdata = _pgdata(var_dir)
    if _postmaster_pid(pgdata) is None:
        return False
    _import_pgserver()
    from pgserver._commands import pg_ctl

    # PostgreSQL refuses to run as root, so pgserver runs it as its own system user; pg_ctl must
    # act as that user too.
    user = "pgserver" if os.name == "posix" and os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
    return True


if __name__ == "__main__":
    # Used by scripts/run-console.sh: ``python -m console.embedded running|stop VAR_DIR``.
    import sys

    action, var = sys.argv[1], Path(sys.argv[2])
    if action == "running":
        sys.exit(0 if embedded_running(var) else 1)
    if action == "stop":
        stopped = embedded_stop(var)
        print("embedded PostgreSQL stopped" if stopped else "embedded PostgreSQL was not running")
        sys.exit(0)
    sys.exit(f"unknown action {action!r}")
