"""A cursor kept per connection and thread for the engine's hot statements.

``conn.execute`` makes a cursor per call, and a new cursor looks up a loader for every column of
its result: for a dequeue's 22 columns that is a quarter of the client's time a call (60 against
43 µs a call for the same prepared statement, docs/BENCHMARKS.md). A kept cursor keeps its
loaders. It is kept on the connection (so it goes with it) and per thread (a cursor's result
belongs to the call that made it), and only for statements of a few rows: it holds its last
result until its next statement.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

_ATTR = "_aq_engine_cursors"
# Results of up to this many rows are left in the kept cursor until its next statement.
KEEP_ROWS = 100


def execute(conn: psycopg.Connection, sql: str, params: Any, *, rows: int = 1) -> psycopg.Cursor:
    """``conn.execute(sql, params, prepare=True)`` on this thread's kept cursor of ``conn`` when
    the statement returns at most :data:`KEEP_ROWS` rows (``rows``), else on a new cursor."""
    if rows > KEEP_ROWS:
        return conn.execute(sql, params, prepare=True)
    kept: dict[int, psycopg.Cursor] | None = conn.__dict__.get(_ATTR)
    if kept is None:
        kept = conn.__dict__.setdefault(_ATTR, {})
    me = threading.get_ident()
    cur = kept.get(me)
    if cur is None or cur.closed:
        cur = kept[me] = conn.cursor()
    return cur.execute(sql, params, prepare=True)
