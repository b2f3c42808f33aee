"""What the dequeue-side statements share: the selected columns, the candidate filter, the
statistics counter and the multi-consumer countdown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from queues.engine.sets import count_down_sql, stat_sql
from queues.engine.types import EXPIRED, READY, DequeuedMessage, Position, QueueInfo

_COLUMNS = (
    "m.id, m.queue_id, m.state, m.priority, m.kind, m.type_name, m.correlation, m.sender, "
    "m.headers::text, m.payload::text, m.enq_time, m.attempts, m.sort_pri, m.commit_seq, "
    "m.lock_token, "
    "m.original_queue_id, m.exception_reason"
)


def _row_to_message(row: Sequence[Any], lock_token: UUID | None = None) -> DequeuedMessage:
    (
        mid,
        qid,
        state,
        pri,
        kind,
        tname,
        corr,
        sender,
        headers,
        payload,
        enq_time,
        attempts,
        sort_pri,
        cseq,
        token,
        orig,
        reason,
    ) = row
    # Read as text on every connection (Django's loads jsonb as text, a plain psycopg one would
    # parse it), so a payload that is a JSON string is never parsed twice.
    payload = json.loads(payload)
    headers = json.loads(headers)
    return DequeuedMessage(
        id=mid,
        queue_id=qid,
        state=state,
        priority=pri,
        kind=kind,
        type_name=tname,
        correlation=corr,
        sender=sender,
        headers=headers,
        payload=payload,
        enq_time=enq_time,
        attempts=attempts,
        position=Position(sort_pri, cseq, mid),
        lock_token=lock_token or token,
        original_queue_id=orig,
        exception_reason=reason,
    )


def _candidate_filter(
    queue: QueueInfo,
    *,
    correlation: str | None,
    msgid: int | None,
    after: Position | None,
    alias: str = "m",
) -> tuple[str, dict[str, Any]]:
    state = EXPIRED if queue.is_exception else READY
    parts = [
        f"{alias}.queue_id = %(qid)s",
        # A literal, not a parameter (it is one of two engine constants), so a prepared
        # statement's generic plan still sees the state when it costs aq_message_dequeue_v2.
        f"{alias}.state = '{state}'",
        f"{alias}.commit_seq IS NOT NULL",
    ]
    params: dict[str, Any] = {"qid": queue.id}
    if correlation:
        # AQ correlation identifiers take % and _ wildcards.
        parts.append(f"{alias}.correlation LIKE %(corr)s")
        params["corr"] = correlation
    if msgid is not None:
        parts.append(f"{alias}.id = %(msgid)s")
        params["msgid"] = msgid
    if after is not None:
        parts.append(
            f"({alias}.sort_pri, {alias}.commit_seq, {alias}.id) > (%(ap)s, %(ac)s, %(ai)s)"
        )
        params.update(ap=after.sort_pri, ac=after.commit_seq, ai=after.id)
    return " AND ".join(parts), params


def _stat(src: str) -> str:
    """The ``stat`` CTE: the dequeue counter of queue ``%(qid)s`` gains ``count(*)`` of ``src``."""
    return f"stat AS ({stat_sql('qid', src, 'dequeued')})"


def _finish_consumed_sql(src: str, messages: str = "aq_message") -> str:
    """Count down the pending consumers of the messages in ``src`` (a subscriber's consumed
    copies, column ``message_id``); the last one processes it. See :func:`count_down_sql`."""
    return (
        f", u AS ({count_down_sql(messages, src, returning=_COLUMNS)}), "
        f"{_stat('u')} SELECT * FROM u"
    )
