"""Receive: a remote propagation's batch arriving at the destination site, exactly once.

The source site dequeues a batch, calls :func:`receive` on its connection to this site and
commits here, then commits its own dequeue. Two databases, no two-phase commit: if the source
dies between the two commits its dequeue rolls back and it sends the same messages (same source
msgids) again. The receipts written here in the enqueue's own transaction (``UNIQUE``, ``ON
CONFLICT DO NOTHING``) make the re-sent copies a no-op. docs/SITES.md, "Exactly once".
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from queues.engine.enqueue import enqueue
from queues.engine.origin import arrived
from queues.engine.rows import _sources
from queues.engine.types import PERSISTENT_OR_BUFFERED, NewMessage, QueueInfo

RECEIPTS = "aq_propagation_receipt"
ARRIVALS = "aq_propagation_arrival"


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
    source_queue: str = "",
) -> int:
    """Enqueue into ``destination`` (a queue of this site) the ``messages`` whose source ids
    (``source_ids``, one per message) this site has not yet received from (``source_site``,
    ``stream``), and record them, in the caller's transaction. ``forget``: source ids the
    source has since committed as consumed; their receipts are no longer needed. Returns how
    many were enqueued (the rest were duplicates of an earlier, committed delivery)."""
    return receive_fanout(
        conn,
        [Arrival(i, m, (destination,)) for m, i in zip(messages, source_ids, strict=True)],
        source_site=source_site,
        stream=stream,
        forget=forget,
        user=user,
        delivery_mode=delivery_mode,
        source_queue=source_queue,
    )


@dataclass(frozen=True)
class Arrival:
    """One message crossing once to this site, for each of ``queues`` (queue-to-dblink: every
    queue here whose propagation's rules took it at the source). A message transformed
    differently for two queues comes as two arrivals with the same ``source_id``."""

    source_id: int
    message: NewMessage
    queues: Sequence[QueueInfo]


def receive_fanout(
    conn: psycopg.Connection,
    arrivals: Sequence[Arrival],
    *,
    source_site: str,
    stream: str,
    forget: Sequence[int] = (),
    user: str = "",
    delivery_mode: str,
    source_queue: str = "",
) -> int:
    """Enqueue each arrival into each of its queues, in the caller's transaction, exactly once:
    one receipt per source message and stream (``ON CONFLICT DO NOTHING``), so a message re-sent
    after the source failed to commit is skipped for all its queues together. Adds to the
    arrival counters (V$PROPAGATION_RECEIVER). Returns how many copies were enqueued."""
    forget_receipts(conn, forget, source_site=source_site, stream=stream)
    if not arrivals:
        return 0
    ids = sorted({a.source_id for a in arrivals})
    rows = conn.execute(
        f"INSERT INTO {RECEIPTS} (source_site, stream, source_msgid) "
        "SELECT %s, %s, unnest(%s::bigint[]) ON CONFLICT DO NOTHING RETURNING source_msgid",
        (source_site, stream, ids),
    ).fetchall()
    new = {r[0] for r in rows}
    per_queue: dict[int, tuple[QueueInfo, list[NewMessage]]] = {}
    for a in arrivals:
        if a.source_id not in new:
            continue
        # The origin is kept (or is the source site), the source site joins the route.
        (message,) = arrived([a.message], source_site)
        for q in a.queues:
            per_queue.setdefault(q.id, (q, []))[1].append(message)
    copies = 0
    for qid, (q, fresh) in per_queue.items():
        t0 = time.perf_counter()
        enqueue(
            conn,
            q,
            fresh,
            user=user,
            delivery_mode=delivery_mode,
            in_caller_transaction=True,
        )
        nbytes = len(json.dumps([m.payload for m in fresh])) - 2 * len(fresh)
        conn.execute(
            f"INSERT INTO {ARRIVALS} AS a (source_site, source_queue, stream, queue_id, "
            "total_msgs, total_bytes, batches, elapsed_enqueue_time) "
            "VALUES (%s, %s, %s, %s, %s, %s, 1, %s) "
            "ON CONFLICT (source_site, stream, queue_id) DO UPDATE SET "
            "total_msgs = a.total_msgs + EXCLUDED.total_msgs, "
            "total_bytes = a.total_bytes + EXCLUDED.total_bytes, batches = a.batches + 1, "
            "elapsed_enqueue_time = a.elapsed_enqueue_time + EXCLUDED.elapsed_enqueue_time, "
            "source_queue = EXCLUDED.source_queue, last_arrival = now()",
            (
                source_site, source_queue, stream, qid, len(fresh), nbytes,
                time.perf_counter() - t0,
            ),
        )  # fmt: skip
        copies += len(fresh)
    return copies


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


def still_pending_any(
    conn: psycopg.Connection, source: QueueInfo, sub_ids: Sequence[int], ids: Sequence[int]
) -> set[int]:
    """Of ``ids``, the messages of ``source`` that any of subscribers ``sub_ids`` still has a
    copy of (a queue-to-dblink job's subscribers)."""
    out: set[int] = set()
    for sub in sub_ids:
        out |= still_pending(conn, source, sub, ids)
    return out
