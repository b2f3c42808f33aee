"""The engine runs its hot statements on a cursor kept per connection and thread
(queues/engine/cursors.py): the same cursor for the same thread's next call, another thread's
own, a new one for a big result, and nothing kept once the connection is gone."""

from __future__ import annotations

import gc
import importlib
import threading
import weakref

import psycopg
import pytest

from queues import services

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

        # A result that may be big is not left in a kept cursor.
        big = cursors.execute(
            conn, "SELECT generate_series(1, %(n)s)", {"n": 500}, rows=cursors.KEEP_ROWS + 1
        )
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
