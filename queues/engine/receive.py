"""Receive: a remote propagation's batch arriving at the destination site, exactly once.

The source site dequeues a batch, calls :func:`receive` on its connection to this site and
commits here, then commits its own dequeue. Two databases, no two-phase commit: if the source
dies between the two commits its dequeue rolls back and it sends the same messages (same source
msgids) again. The receipts written here in the enqueue's own transaction (``UNIQUE``, ``ON
CONFLICT DO NOTHING``) make the re-sent copies a no-op. docs/SITES.md, "Exactly once".
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from queues.engine.enqueue import enqueue
from queues.engine.origin import arrived
from queues.engine.rows import _sources
from queues.engine.types import PERSISTENT_OR_BUFFERED, NewMessage, QueueInfo

RECEIPTS = "aq_propagation_receipt"


def receive(
    conn: psycopg.Connection,
    destination: QueueInfo,
    messages: Sequence[NewMessage],
    source_ids: Sequence[int],
    *,
    source_site: str,
    stream: str,
    forget: Sequence[int] = (),
    user: str = "",
    delivery_mode: str,
) -> int:
    """Enqueue into ``destination`` (a queue of this site) the ``messages`` whose source ids
    (``source_ids``, one per message) this site has not yet received from (``source_site``,
    ``stream``), and record them, in the caller's transaction. ``forget``: source ids the
    source has since committed as consumed; their receipts are no longer needed. Returns how
    many were enqueued (the rest were duplicates of an earlier, committed delivery)."""
    forget_receipts(conn, forget, source_site=source_site, stream=stream)
    if not messages:
        return 0
    rows = conn.execute(
        f"INSERT INTO {RECEIPTS} (source_site, stream, source_msgid) "
        "SELECT %s, %s, unnest(%s::bigint[]) ON CONFLICT DO NOTHING RETURNING source_msgid",
        (source_site, stream, list(source_ids)),
    ).fetchall()
    new = {r[0] for r in rows}
    fresh = [m for m, i in zip(messages, source_ids, strict=True) if i in new]
    if fresh:
        fresh = arrived(fresh, source_site)  # origin kept, the source site joins the route
        enqueue(
            conn,
            destination,
            fresh,
            user=user,
            delivery_mode=delivery_mode,
            in_caller_transaction=True,
        )
    return len(fresh)


def receipts(conn: psycopg.Connection, *, source_site: str, stream: str) -> list[int]:
    """The source ids this site still holds receipts for (read at the destination)."""
    rows = conn.execute(
        f"SELECT source_msgid FROM {RECEIPTS} WHERE source_site = %s AND stream = %s",
        (source_site, stream),
    ).fetchall()
    return [r[0] for r in rows]


def forget_receipts(
    conn: psycopg.Connection, ids: Sequence[int], *, source_site: str, stream: str
) -> int:
    """Delete receipts the source no longer needs (at the destination, caller's transaction)."""
    if not ids:
        return 0
    cur = conn.execute(
        f"DELETE FROM {RECEIPTS} WHERE source_site = %s AND stream = %s AND source_msgid = ANY(%s)",
        (source_site, stream, list(ids)),
    )
    return cur.rowcount


def still_pending(
    conn: psycopg.Connection, source: QueueInfo, sub_id: int, ids: Sequence[int]
) -> set[int]:
    """Of ``ids``, the messages of ``source`` that subscriber ``sub_id`` still has a copy of (at
    the source): the ones a propagation might send again."""
    if not ids:
        return set()
    _, C = _sources(source, PERSISTENT_OR_BUFFERED)
    rows = conn.execute(
        f"SELECT DISTINCT message_id FROM {C} WHERE subscriber_id = %s AND message_id = ANY(%s)",
        (sub_id, list(ids)),
    ).fetchall()
    return {r[0] for r in rows}
