"""Every console session (Django's and the engine's raw ones, which copy its parameters) asks
the server for TCP keepalives, so a session whose client host vanished is dropped and its
advisory locks (a gateway agent's, a propagation run's) freed within about 20 s, not hours."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from queues.services import conninfo


def test_django_and_engine_sessions_ask_for_keepalives(db):
    host = connection.settings_dict.get("HOST") or ""
    if not host or host.startswith("/"):
        pytest.skip("a Unix socket: the server ignores keepalives there (reads as 0)")
    with connection.cursor() as cur:
        cur.execute("SHOW tcp_keepalives_idle")
        assert cur.fetchone()[0] in ("10", "10s")
    with psycopg.connect(conninfo()) as raw:
        shown = [raw.execute(f"SHOW tcp_keepalives_{k}").fetchone()[0] for k in ("idle", "count")]
    assert shown[0] in ("10", "10s") and shown[1] == "3"
