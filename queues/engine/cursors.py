"""A cursor kept per connection and thread for the engine's hottest one-row statements.

``conn.execute`` makes a cursor per call, and a new cursor builds a transformer that looks up a
loader for every column of its result: for a dequeue's 22 columns a quarter of the client's time
a call (60 against 43 µs for the same prepared statement, docs/BENCHMARKS.md). psycopg keeps a
cursor's transformer while the cursor runs the same query object again, so the statements that
use this are the ones whose text is cached (``enqueue._enqueue_one_sql``, ``_enqueue_sql``,
``dequeue._take_sql``).

The cursor lives on the connection object (so it goes with the connection, as a reference cycle:
a connection dropped without ``close()`` lingers until the garbage collector runs; the engine's
own connections are closed when their thread ends, see ``buffered.own_connection``), one per
thread (a result belongs to the call that made it), and only for statements of one row: it holds
its last result until its next statement. It copies the connection's row factory and adapters
when it is made; the engine changes neither.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

_ATTR = "_aq_engine_cursors"


def execute(conn: psycopg.Connection, sql: str, params: Any, *, rows: int = 1) -> psycopg.Cursor:
    """``conn.execute(sql, params, prepare=True)``, on this thread's kept cursor of ``conn`` when
    the statement returns at most one row (``rows``), else on a new cursor."""
    if rows > 1:
        return conn.execute(sql, params, prepare=True)
    kept: dict[int, psycopg.Cursor] | None = conn.__dict__.get(_ATTR)
    if kept is None:
        kept = conn.__dict__.setdefault(_ATTR, {})
    me = threading.get_ident()
    cur = kept.get(me)
    if cur is None or cur.closed:
        cur = kept[me] = conn.cursor()
    return cur.execute(sql, params, prepare=True)
