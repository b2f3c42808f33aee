"""The engine runs its hottest one-row statements on a cursor kept per connection and thread
(queues/engine/cursors.py): the same cursor for the same thread's next call, another thread's
own, a new one for a result of more rows, nothing kept once the connection is gone, and the
engine's own connections closed when their thread ends although the kept cursor ties them in a
reference cycle."""

from __future__ import annotations

import gc
import importlib
import threading
import time
import weakref

import psycopg
import pytest

from queues import services
from queues.engine import buffered

cursors = importlib.import_module("queues.engine.cursors")


@pytest.mark.django_db
def test_one_cursor_per_connection_and_thread_for_small_results() -> None:
    with psycopg.connect(services.conninfo(), autocommit=True) as conn:
        first = cursors.execute(conn, "SELECT %(n)s::int", {"n": 1})
        assert first.fetchone() == (1,)
        again = cursors.execute(conn, "SELECT %(n)s::int", {"n": 2})
        assert again is first and again.fetchone() == (2,)

        other: list[psycopg.Cursor] = []
        thread = threading.Thread(
            target=lambda: other.append(cursors.execute(conn, "SELECT 3", None))
        )
        thread.start()
        thread.join()
        assert other and other[0] is not first and other[0].fetchone() == (3,)

        # A result of more rows (messages' payloads) is not left in a kept cursor.
        big = cursors.execute(conn, "SELECT generate_series(1, %(n)s)", {"n": 500}, rows=500)
        assert big is not first and len(big.fetchall()) == 500

        first.close()  # a closed one is replaced
        fresh = cursors.execute(conn, "SELECT 4", None)
        assert fresh is not first and fresh.fetchone() == (4,)


@pytest.mark.django_db
def test_the_kept_cursor_goes_with_its_connection() -> None:
    conn = psycopg.connect(services.conninfo(), autocommit=True)
    cursors.execute(conn, "SELECT 1", None).fetchone()
    gone = weakref.ref(conn)
    conn.close()
    del conn
    gc.collect()
    assert gone() is None


@pytest.mark.django_db
def test_the_engines_own_connection_closes_when_its_thread_ends() -> None:
    """Without the garbage collector: the thread's end alone closes the session."""
    with psycopg.connect(services.conninfo(), autocommit=True) as conn:
        pids: list[int] = []

        def work() -> None:
            own = buffered.own_connection(conn)
            pids.append(cursors.execute(own, "SELECT pg_backend_pid()", None).fetchone()[0])

        gc.disable()
        try:
            thread = threading.Thread(target=work)
            thread.start()
            thread.join()
            assert pids
            for _ in range(100):
                alive = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pids[0],)
                ).fetchone()[0]
                if not alive:
                    break
                time.sleep(0.05)
            assert not alive, "the thread's own connection is still open"
        finally:
            gc.enable()
