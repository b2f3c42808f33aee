"""Purge: messages removed by condition."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from queues.engine.types import QueueInfo


@dataclass
class PurgeCondition:
    """Which messages a purge removes; empty means all of them."""

    states: Sequence[str] = ()
    correlation: str | None = None
    ids: Sequence[int] | None = None
    enqueued_before: datetime | None = None
    priority: int | None = None

    def is_all(self) -> bool:
        return not (
            self.states
            or self.correlation
            or self.ids is not None
            or self.enqueued_before
            or self.priority is not None
        )


def purge(conn: psycopg.Connection, queue: QueueInfo, condition: PurgeCondition) -> int:
    """Delete the queue's messages matching ``condition``; messages locked by a running dequeue
    are skipped (AQ's purge with block => FALSE). Returns how many were removed."""
    parts = ["m.queue_id = %(qid)s"]
    params: dict[str, Any] = {"qid": queue.id}
    if condition.states:
        parts.append("m.state = ANY(%(states)s)")
        params["states"] = list(condition.states)
    if condition.correlation:
        parts.append("m.correlation LIKE %(corr)s")
        params["corr"] = condition.correlation
    if condition.ids is not None:
        parts.append("m.id = ANY(%(ids)s)")
        params["ids"] = list(condition.ids)
    if condition.enqueued_before:
        parts.append("m.enq_time < %(before)s")
        params["before"] = condition.enqueued_before
    if condition.priority is not None:
        parts.append("m.priority = %(pri)s")
        params["pri"] = condition.priority
    where = " AND ".join(parts)
    cur = conn.execute(
        f"""
        WITH c AS (SELECT m.id FROM aq_message m WHERE {where} FOR UPDATE SKIP LOCKED),
        gone AS (DELETE FROM aq_message_consumer mc USING c WHERE mc.message_id = c.id)
        DELETE FROM aq_message m USING c WHERE m.id = c.id
        """,
        params,
    )
    return cur.rowcount
