"""What the dequeue-side statements share: the selected columns, the candidate filter, the
statistics counter and the multi-consumer countdown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from queues.engine.sets import count_down_sql, stat_sql, stat_update_sql
from queues.engine.storage import consumer_part, message_part
from queues.engine.types import (
    BUFFERED,
    EXPIRED,
    PERSISTENT,
    READY,
    STAT_SHARDS,
    DequeuedMessage,
    Position,
    QueueInfo,
)

_COLUMNS = (
    "m.id, m.queue_id, m.state, m.priority, m.kind, m.type_name, m.correlation, m.sender, "
    "m.headers::text, m.payload::text, m.enq_time, m.attempts, m.sort_pri, m.commit_seq, "
    "m.lock_token, "
    "m.original_queue_id, m.exception_reason, m.delivery_mode, m.in_buffer, "
    "upper(encode(m.tag, 'hex')), m.origin_site, m.route"
)


# A row's place in the queue table's order, read from _COLUMNS' row (sort_pri, commit_seq, id).
ROW_ORDER = itemgetter(12, 13, 0)


def _row_to_message(
    row: Sequence[Any],
    _new: Any = object.__new__,
    _loads: Any = json.loads,
) -> DequeuedMessage:
    """The message of a row of _COLUMNS (in its order); a column after them (a statement's
    counter flag) is left out. One dict display into the new object's __dict__, without
    ``__init__``: 2.2-2.75 µs a message against 3.9-6.7 for the field names zipped with the row
    and their dict then copied (timeit, same runs; docs/BENCHMARKS.md)."""
    # Headers are read as text on every connection (Django's loads jsonb as text, a plain
    # psycopg one would parse it); the payload is parsed on first use. Most messages have no
    # headers, and json.loads("{}") costs as much as a small payload's parse.
    headers = row[8]
    message = _new(DequeuedMessage)
    message.__dict__.update(
        {
            "id": row[0],
            "queue_id": row[1],
            "state": row[2],
            "priority": row[3],
            "kind": row[4],
            "type_name": row[5],
            "correlation": row[6],
            "sender": row[7],
            "headers": {} if headers == "{}" else _loads(headers),
            "payload_json": row[9],
            "enq_time": row[10],
            "attempts": row[11],
            "position": Position(row[12], row[13], row[0]),
            "lock_token": row[14],
            "original_queue_id": row[15],
            "exception_reason": row[16],
            "delivery_mode": row[17],
            "in_buffer": row[18],
            "tag": row[19],
            "origin_site": row[20],
            "route": row[21],
        }
    )
    return message


def _sources(queue: QueueInfo, delivery_mode: str | None) -> tuple[str, str]:
    """The message and consumer relations a dequeue of ``delivery_mode`` reads: the logged
    leaves for persistent messages (a prepared statement plans over that one leaf), the queue
    table's partitions over both leaves for buffered ones, which are in the UNLOGGED leaf until
    they spill to the logged one."""
    if delivery_mode == PERSISTENT:
        return queue.messages, queue.consumers
    return message_part(queue.queue_table_id), consumer_part(queue.queue_table_id)


def _candidate_filter(
    queue: QueueInfo,
    *,
    correlation: str | None,
    msgid: int | None,
    after: Position | None,
    alias: str = "m",
    delivery_mode: str | None = None,
    msgids: Sequence[int] | None = None,
) -> tuple[str, dict[str, Any]]:
    state = EXPIRED if queue.is_exception else READY
    parts = [
        f"{alias}.queue_id = %(qid)s",
        # A literal, not a parameter (it is one of two engine constants), so a prepared
        # statement's generic plan still sees the state when it costs aq_message_dequeue_v2.
        f"{alias}.state = '{state}'",
        f"{alias}.commit_seq IS NOT NULL",
    ]
    # Literals again. The logged leaf holds spilled buffered messages beside persistent ones;
    # None (and PERSISTENT_OR_BUFFERED) takes both kinds. See _sources for where each is read.
    if delivery_mode == PERSISTENT:
        parts.append(f"{alias}.delivery_mode = '{PERSISTENT}'")
    elif delivery_mode == BUFFERED:
        parts.append(f"{alias}.delivery_mode = '{BUFFERED}'")
    params: dict[str, Any] = {"qid": queue.id}
    if correlation:
        # AQ correlation identifiers take % and _ wildcards.
        parts.append(f"{alias}.correlation LIKE %(corr)s")
        params["corr"] = correlation
    if msgid is not None:
        parts.append(f"{alias}.id = %(msgid)s")
        params["msgid"] = msgid
    if msgids is not None:
        parts.append(f"{alias}.id = ANY(%(msgids)s)")
        params["msgids"] = list(msgids)
    if after is not None:
        parts.append(
            f"({alias}.sort_pri, {alias}.commit_seq, {alias}.id) > (%(ap)s, %(ac)s, %(ai)s)"
        )
        params.update(ap=after.sort_pri, ac=after.commit_seq, ai=after.id)
    return " AND ".join(parts), params


# Buffered messages count in the buffer's own UNLOGGED counters (V$BUFFERED_QUEUES), which a
# crash resets along with the buffer, and which cost no WAL on the buffered path.
_STAT_BUF = """
bstat AS (
    INSERT INTO aq_buffer_stat AS s (queue_id, sender, shard, dequeued, last_deq)
    SELECT %(qid)s, '', pg_backend_pid() %% {shards}, count(*), now() FROM {src} HAVING count(*) > 0
    ON CONFLICT (queue_id, sender, shard)
    DO UPDATE SET dequeued = s.dequeued + EXCLUDED.dequeued, last_deq = EXCLUDED.last_deq
)"""


def _stat(src: str, delivery_mode: str = PERSISTENT, *, counter_row: bool = False) -> str:
    """The counter CTE(s) for the dequeued rows in ``src``: the dequeue counter of queue
    ``%(qid)s`` for persistent ones, the buffer's counters (aq_buffer_stat) for buffered ones.
    ``counter_row``: this backend's counter row of the queue exists (sets.COUNTER_ROWS), so a
    persistent dequeue UPDATEs it; the statement then says whether it counted (sets.COUNTED)."""

    def buffered(rows: str) -> str:
        return _STAT_BUF.replace("{shards}", str(STAT_SHARDS)).replace("{src}", rows)

    if delivery_mode == PERSISTENT:
        if counter_row:
            return f"stat AS ({stat_update_sql('qid', src, 'dequeued')})"
        return f"stat AS ({stat_sql('qid', src, 'dequeued')})"
    if delivery_mode == BUFFERED:
        return buffered(src)
    only = "(SELECT 1 FROM {src} WHERE {src}.delivery_mode = '{mode}') AS x"
    return (
        f"stat AS ({stat_sql('qid', only.format(src=src, mode=PERSISTENT), 'dequeued')}), "
        + buffered(only.format(src=src, mode=BUFFERED))
    )


def _finish_consumed_sql(
    src: str, messages: str = "aq_message", delivery_mode: str = PERSISTENT
) -> str:
    """Count down the pending consumers of the messages in ``src`` (a subscriber's consumed
    copies, column ``message_id``); the last one processes it. See :func:`count_down_sql`."""
    return (
        f", u AS ({count_down_sql(messages, src, returning=_COLUMNS)}), "
        f"{_stat('u', delivery_mode)} SELECT * FROM u"
    )
