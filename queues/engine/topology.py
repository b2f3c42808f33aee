"""Reads of the topology the engine needs: the queue, its subscribers and their rules."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import psycopg

from queues.engine.types import InvalidMessage, QueueInfo, QueueNotFound

_QUEUE_INFO_SQL = """
SELECT q.id, q.name, qt.id, qt.name, qt.sort_order, qt.multiple_consumers, q.kind,
       q.exception_queue_id, q.max_retries, q.retry_delay, q.retention_time,
       q.enqueue_enabled, q.dequeue_enabled, qt.payload_type, qt.payload_schema,
       qt.message_grouping
FROM queues_queue q JOIN queues_queuetable qt ON qt.id = q.queue_table_id
"""


def queue_info(conn: psycopg.Connection, queue: int | str) -> QueueInfo:
    """The queue by id or (case-insensitive) name."""
    where = "q.id = %s" if isinstance(queue, int) else "upper(q.name) = upper(%s)"
    row = conn.execute(_QUEUE_INFO_SQL + " WHERE " + where, (queue,)).fetchone()
    if row is None:
        raise QueueNotFound(f"Queue {queue!r} does not exist.", field="queue")
    *head, schema, grouping = row
    # Django's connection loads jsonb as text; a plain psycopg connection parses it.
    return QueueInfo(*head, json.loads(schema) if isinstance(schema, str) else schema, grouping)


def subscriber_ids(conn: psycopg.Connection, queue: QueueInfo) -> dict[str, int]:
    rows = conn.execute(
        "SELECT upper(name), id FROM queues_subscriber WHERE queue_id = %s", (queue.id,)
    ).fetchall()
    return dict(rows)


def subscriber_rules(conn: psycopg.Connection, queue: QueueInfo) -> dict[int, str]:
    """Subscriber id → rule condition, for the subscribers of ``queue`` that have one."""
    rows = conn.execute(
        "SELECT id, rule FROM queues_subscriber WHERE queue_id = %s AND rule <> ''", (queue.id,)
    ).fetchall()
    return dict(rows)


# Variables a queue-side rule (subscriber rule, dequeue condition) may use: the message itself
# as a row change record, a DDL change record or a user message.
QUEUE_RULE_VARIABLES = {"DML": "row_lcr", "DDL": "ddl_lcr", "MSG": "user"}


@lru_cache(maxsize=1024)
def rule_sql(condition: str, *, field: str, prefix: str) -> tuple[str, dict[str, Any]]:
    """A rule condition compiled to SQL over ``aq_message m`` (the rules engine's PostgreSQL
    compiler, which agrees with its Python one); a bad condition names ``field``, line and
    column."""
    from rules.lang import ConditionError, parse, validate
    from rules.lang.compile_sql import compile_sql

    try:
        cond = parse(condition)
        validate(cond, variables=QUEUE_RULE_VARIABLES)
        # Over the engine's rows: :dml.get_tag() / get_source_database_name() read the
        # message's tag and origin site too (docs/SITES.md).
        expr = compile_sql(
            cond,
            alias="m",
            variables=QUEUE_RULE_VARIABLES,
            param_prefix=prefix,
            message_properties=True,
        )
    except ConditionError as exc:
        raise InvalidMessage(str(exc), field=field) from exc
    return expr.sql, expr.params


def subscriber_id(conn: psycopg.Connection, queue: QueueInfo, consumer: str) -> int:
    row = conn.execute(
        "SELECT id FROM queues_subscriber WHERE queue_id = %s AND upper(name) = upper(%s)",
        (queue.id, consumer),
    ).fetchone()
    if row is None:
        raise InvalidMessage(
            f"{consumer!r} is not a subscriber of queue {queue.name}.", field="consumer_name"
        )
    return row[0]
