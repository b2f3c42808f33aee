"""The queue engine: AQ semantics over PostgreSQL, on a plain psycopg 3 connection.

Pure Python plus SQL, no Django import: services call it with Django's connection, the benchmarks and
Spark jobs with their own. Every function runs in the caller's transaction; the caller commits.

Ordering. Every message carries ``(sort_pri, commit_seq, id)`` and dequeue follows that key:
``sort_pri`` is the priority on priority-ordered queue tables (lower number first, as in AQ) and 0
elsewhere; ``commit_seq`` is 0 except on commit-time tables. There it is NULL at insert and a
deferred constraint trigger (``aq_assign_commit_seq``, see the 0002 migration) gives all of a
transaction's messages one number from a sequence at COMMIT, under a transaction-scoped advisory lock
that PostgreSQL releases only after the commit is visible. So commit-time enqueuers commit in
``commit_seq`` order and a snapshot that sees a message also sees every message with a lower number:
the visible messages are always a prefix of the final order (AQ's "not visible until a deterministic
order can be established"), two browses agree, and a dependent transaction comes after the one it
waited for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

import psycopg
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from core.exceptions import Conflict, DomainError, NotFound
from core.storable import json_problems, seconds_problem

READY, WAITING, PROCESSED, EXPIRED = "READY", "WAITING", "PROCESSED", "EXPIRED"
NORMAL_QUEUE, EXCEPTION_QUEUE = "NORMAL_QUEUE", "EXCEPTION_QUEUE"
REMOVE, LOCKED, BROWSE = "REMOVE", "LOCKED", "BROWSE"
FIRST_MESSAGE, NEXT_MESSAGE = "FIRST_MESSAGE", "NEXT_MESSAGE"
USER, ROW_LCR, DDL_LCR = "USER", "ROW_LCR", "DDL_LCR"
REASON_MAX_RETRIES = "MAX_RETRIES_EXCEEDED"
REASON_EXPIRED = "EXPIRED"
STAT_SHARDS = 16
DEFAULT_LEASE_S = 30.0


class QueueNotFound(NotFound):
    code = "queue_not_found"


class QueueDisabled(Conflict):
    code = "queue_disabled"


class NoSubscribers(Conflict):
    code = "no_subscribers"


class InvalidMessage(DomainError):
    code = "invalid_message"


class LeaseMismatch(Conflict):
    code = "lease_mismatch"


@dataclass(frozen=True)
class QueueInfo:
    """What the engine needs to know about a queue; read once per call with :func:`queue_info`."""

    id: int
    name: str
    queue_table_id: int
    queue_table: str
    sort_order: str
    multiple_consumers: bool
    kind: str
    exception_queue_id: int | None
    max_retries: int
    retry_delay: float
    retention_time: float
    enqueue_enabled: bool
    dequeue_enabled: bool
    payload_type: str
    payload_schema: Any

    @property
    def is_exception(self) -> bool:
        return self.kind == EXCEPTION_QUEUE

    @property
    def by_priority(self) -> bool:
        return self.sort_order.startswith("priority")

    @property
    def commit_time(self) -> bool:
        return self.sort_order.endswith("commit_time")

    @property
    def channel(self) -> str:
        return channel_name(self.id)


@dataclass
class NewMessage:
    payload: Any
    priority: int = 1
    delay: float = 0.0
    expiration: float | None = None
    correlation: str = ""
    sender: str = ""
    headers: dict[str, Any] = field(default_factory=dict)
    kind: str = USER
    type_name: str = ""
    recipients: Sequence[str] | None = None


@dataclass(frozen=True)
class Position:
    """Where a NEXT_MESSAGE dequeue or browse continues from."""

    sort_pri: int
    commit_seq: int
    id: int

    def token(self) -> str:
        return f"{self.sort_pri}.{self.commit_seq}.{self.id}"

    @classmethod
    def parse(cls, token: str) -> Position:
        try:
            a, b, c = (int(p) for p in token.split("."))
        except ValueError as exc:
            raise InvalidMessage(
                "Not a queue position: give the cursor of an earlier dequeue answer.",
                field="cursor",
            ) from exc
        return cls(a, b, c)


@dataclass(frozen=True)
class DequeuedMessage:
    id: int
    queue_id: int
    state: str
    priority: int
    kind: str
    type_name: str
    correlation: str
    sender: str
    headers: dict[str, Any]
    payload: Any
    enq_time: datetime
    attempts: int
    position: Position
    lock_token: UUID | None = None
    original_queue_id: int | None = None
    exception_reason: str = ""

    @property
    def payload_pretty(self) -> str:
        return json.dumps(self.payload, indent=2, sort_keys=True)


def channel_name(queue_id: int) -> str:
    return f"aq_q{queue_id}"


# --- topology reads ------------------------------------------------------------------------------

_QUEUE_INFO_SQL = """
SELECT q.id, q.name, qt.id, qt.name, qt.sort_order, qt.multiple_consumers, q.kind,
       q.exception_queue_id, q.max_retries, q.retry_delay, q.retention_time,
       q.enqueue_enabled, q.dequeue_enabled, qt.payload_type, qt.payload_schema
FROM queues_queue q JOIN queues_queuetable qt ON qt.id = q.queue_table_id
"""


def queue_info(conn: psycopg.Connection, queue: int | str) -> QueueInfo:
    """The queue by id or (case-insensitive) name."""
    where = "q.id = %s" if isinstance(queue, int) else "upper(q.name) = upper(%s)"
    row = conn.execute(_QUEUE_INFO_SQL + " WHERE " + where, (queue,)).fetchone()
    if row is None:
        raise QueueNotFound(f"Queue {queue!r} does not exist.", field="queue")
    *head, schema = row
    # Django's connection loads jsonb as text; a plain psycopg connection parses it.
    return QueueInfo(*head, json.loads(schema) if isinstance(schema, str) else schema)


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
        expr = compile_sql(cond, alias="m", variables=QUEUE_RULE_VARIABLES, param_prefix=prefix)
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


# --- payload validation --------------------------------------------------------------------------

_ROW_LCR_SCHEMA = {
    "type": "object",
    "required": ["source_database_name", "command_type", "object_owner", "object_name"],
    "properties": {
        "source_database_name": {"type": "string", "minLength": 1},
        "command_type": {
            "enum": ["INSERT", "UPDATE", "DELETE", "LOB WRITE", "LOB TRIM", "LOB ERASE"]
        },
        "object_owner": {"type": "string", "minLength": 1},
        "object_name": {"type": "string", "minLength": 1},
        "tag": {"type": ["string", "null"], "pattern": "^([0-9A-Fa-f]{2})*$"},
        "transaction_id": {"type": ["string", "null"]},
        "old_values": {"type": "object"},
        "new_values": {"type": "object"},
    },
}
_DDL_LCR_SCHEMA = {
    "type": "object",
    "required": ["source_database_name", "command_type", "object_type", "ddl_text"],
    "properties": {
        "source_database_name": {"type": "string", "minLength": 1},
        "command_type": {"type": "string", "minLength": 1},
        "object_type": {"type": "string", "minLength": 1},
        "object_owner": {"type": ["string", "null"]},
        "object_name": {"type": ["string", "null"]},
        "base_table_owner": {"type": ["string", "null"]},
        "base_table_name": {"type": ["string", "null"]},
        "ddl_text": {"type": "string"},
        "tag": {"type": ["string", "null"], "pattern": "^([0-9A-Fa-f]{2})*$"},
    },
}


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_check(schema: Any) -> None:
    """Raise InvalidMessage naming ``payload_schema`` if ``schema`` is not a valid JSON Schema."""
    try:
        _validator(json.dumps(schema, sort_keys=True))
    except SchemaError as exc:
        raise InvalidMessage(
            f"Not a valid JSON Schema: {exc.message}", field="payload_schema"
        ) from exc


def _path(prefix: str, parts: Iterable[Any]) -> str:
    out = prefix
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def validate_message(queue: QueueInfo, msg: NewMessage, *, position: int | None = None) -> None:
    """Check one message against the queue's payload type and the message-kind shapes."""
    prefix = "payload" if position is None else f"messages[{position}].payload"
    where = "" if position is None else f"messages[{position}]."
    if msg.kind not in (USER, ROW_LCR, DDL_LCR):
        raise InvalidMessage(f"Unknown message kind {msg.kind!r}.", field=f"{where}kind")
    if msg.expiration is not None and msg.expiration < 0:
        raise InvalidMessage("Expiration cannot be negative.", field=f"{where}expiration")
    if msg.delay < 0:
        raise InvalidMessage("Delay cannot be negative.", field=f"{where}delay")
    for name in ("delay", "expiration"):
        if message := seconds_problem(getattr(msg, name)):
            raise InvalidMessage(message, field=f"{where}{name}")
    # Whatever the caller (API, page, facade, gateway, Spark): only what PostgreSQL can store.
    stored = {
        "payload": msg.payload,
        "headers": msg.headers,
        "correlation": msg.correlation,
        "sender": msg.sender,
        "type_name": msg.type_name,
        "recipients": list(msg.recipients or ()),
    }
    for name, value in stored.items():
        root = prefix if name == "payload" else f"{where}{name}"
        if problems := json_problems(value, root, limit=1):
            path, message = next(iter(problems.items()))
            raise InvalidMessage(message, field=path)
    if not -(2**31) <= msg.priority < 2**31:
        raise InvalidMessage("Priority is out of range.", field=f"{where}priority")
    if len(msg.correlation) > 128:
        raise InvalidMessage("At most 128 characters.", field=f"{where}correlation")
    schemas: list[Any] = []
    if msg.kind == ROW_LCR:
        schemas.append(_ROW_LCR_SCHEMA)
    elif msg.kind == DDL_LCR:
        schemas.append(_DDL_LCR_SCHEMA)
    if queue.payload_type.upper() != "ANY" and queue.payload_schema is not None:
        if (
            msg.kind == USER
            and msg.type_name
            and msg.type_name.upper() != queue.payload_type.upper()
        ):
            raise InvalidMessage(
                f"Queue {queue.name} takes payloads of type {queue.payload_type}, "
                f"not {msg.type_name}.",
                field=f"{where}type_name",
            )
        if msg.kind == USER:
            schemas.append(queue.payload_schema)
    for schema in schemas:
        validator = _validator(json.dumps(schema, sort_keys=True))
        error = next(iter(sorted(validator.iter_errors(msg.payload), key=lambda e: e.path)), None)
        if error is not None:
            raise InvalidMessage(error.message, field=_path(prefix, error.absolute_path))


# --- enqueue -------------------------------------------------------------------------------------

_ENQUEUE_SQL = f"""
WITH q AS (
    SELECT id, queue_table_id FROM queues_queue
    WHERE id = %(qid)s AND enqueue_enabled AND kind = 'NORMAL_QUEUE'
),
m AS (
    -- Payloads and headers come as one JSON array each, not as text[]: psycopg escapes every
    -- quote of every element of a text array in Python, which cost more than the INSERT itself.
    SELECT * FROM ROWS FROM (
             unnest(%(pri)s::int[]), unnest(%(delay)s::float8[]), unnest(%(exp)s::float8[]),
             unnest(%(corr)s::text[]), unnest(%(sender)s::text[]),
             jsonb_array_elements(%(headers)s::jsonb), jsonb_array_elements(%(payload)s::jsonb),
             unnest(%(kind)s::text[]), unnest(%(tname)s::text[]), unnest(%(npend)s::int[]))
         WITH ORDINALITY AS m(priority, delay, expiration, correlation, sender, headers, payload,
                              kind, type_name, npend, ord)
),
ins AS (
    INSERT INTO aq_message (queue_id, queue_table_id, state, priority, sort_pri, commit_seq, kind,
                            type_name, correlation, sender, headers, payload, enq_time, enq_user,
                            delay_until, expiration, expire_at, attempts, pending_consumers,
                            exception_reason, replayed)
    SELECT q.id, q.queue_table_id,
           CASE WHEN m.delay > 0 THEN 'WAITING' ELSE 'READY' END,
           m.priority, %(by_pri)s * m.priority, %(cseq)s, m.kind, m.type_name, m.correlation,
           m.sender, m.headers::jsonb, m.payload::jsonb, now(), %(user)s,
           CASE WHEN m.delay > 0 THEN now() + make_interval(secs => m.delay) END,
           m.expiration,
           CASE WHEN m.expiration IS NOT NULL
                THEN now() + make_interval(secs => m.delay + m.expiration) END,
           0, m.npend, '', false
    FROM q CROSS JOIN m ORDER BY m.ord
    RETURNING id
),
numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS ord FROM ins),
cons AS (
    INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts)
    SELECT numbered.id, r.sub, 0 FROM numbered
    JOIN unnest(%(r_ord)s::int[], %(r_sub)s::bigint[]) AS r(ord, sub) ON r.ord = numbered.ord
),
stat AS (
    INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued)
    SELECT %(qid)s, pg_backend_pid() %% {STAT_SHARDS}, count(*), 0 FROM ins HAVING count(*) > 0
    ON CONFLICT (queue_id, shard) DO UPDATE SET enqueued = aq_queue_stat.enqueued + EXCLUDED.enqueued
)
SELECT array_agg(id ORDER BY id), pg_notify(%(channel)s, '') FROM ins
"""


def enqueue(
    conn: psycopg.Connection,
    queue: QueueInfo,
    messages: Sequence[NewMessage],
    *,
    user: str = "",
    validate: bool = True,
) -> list[int]:
    """Insert ``messages`` in order in the caller's transaction and return their ids.

    Multi-consumer queues give each message to its recipients (by name) or, without a recipient
    list, to every subscriber present now; a message nobody could dequeue is refused (AQ's
    "no recipients"). Listeners on the queue's channel are woken when the transaction commits.
    """
    if not messages:
        return []
    if queue.is_exception:
        raise QueueDisabled(
            f"{queue.name} is an exception queue; messages arrive there only from the engine.",
            field="queue",
        )
    if not queue.enqueue_enabled:
        raise QueueDisabled(f"Enqueue is disabled on queue {queue.name}.", field="queue")
    if validate:
        many = len(messages) > 1
        for i, msg in enumerate(messages):
            validate_message(queue, msg, position=i if many else None)

    r_ord: list[int] = []
    r_sub: list[int] = []
    npend: list[int] = []
    if queue.multiple_consumers:
        subs = subscriber_ids(conn, queue)
        for i, msg in enumerate(messages, start=1):
            if msg.recipients:
                targets = []
                for j, name in enumerate(msg.recipients):
                    sid = subs.get(name.upper())
                    if sid is None:
                        where = (
                            "recipients" if len(messages) == 1 else f"messages[{i - 1}].recipients"
                        )
                        raise InvalidMessage(
                            f"{name!r} is not a subscriber of queue {queue.name}.",
                            field=f"{where}[{j}]",
                        )
                    targets.append(sid)
            else:
                targets = list(subs.values())
            if not targets:
                raise NoSubscribers(
                    f"Queue {queue.name} has no subscribers: a message nobody can dequeue is "
                    "refused.",
                    field="queue",
                )
            npend.append(len(targets))
            r_ord.extend([i] * len(targets))
            r_sub.extend(targets)
    else:
        if any(m.recipients for m in messages):
            raise InvalidMessage(
                f"Queue {queue.name} is single-consumer; recipient lists need a multi-consumer "
                "queue table.",
                field="recipients",
            )
        npend = [0] * len(messages)

    params = {
        "qid": queue.id,
        "pri": [m.priority for m in messages],
        "delay": [float(m.delay or 0) for m in messages],
        "exp": [m.expiration for m in messages],
        "corr": [m.correlation or "" for m in messages],
        "sender": [m.sender or "" for m in messages],
        "headers": json.dumps([m.headers or {} for m in messages]),
        "payload": json.dumps([m.payload for m in messages]),
        "kind": [m.kind for m in messages],
        "tname": [m.type_name or "" for m in messages],
        "npend": npend,
        "r_ord": r_ord,
        "r_sub": r_sub,
        "by_pri": 1 if queue.by_priority else 0,
        "cseq": None if queue.commit_time else 0,
        "user": user,
        "channel": queue.channel,
    }
    row = conn.execute(_ENQUEUE_SQL, params, prepare=True).fetchone()
    ids = row[0] if row and row[0] else []
    if len(ids) != len(messages):
        # The queue was stopped or dropped between reading it and inserting.
        fresh = queue_info(conn, queue.id)
        raise QueueDisabled(f"Enqueue is disabled on queue {fresh.name}.", field="queue")
    if queue.multiple_consumers:
        ruled = [mid for mid, msg in zip(ids, messages, strict=True) if not msg.recipients]
        _apply_subscriber_rules(conn, queue, ids, ruled)
    return ids


def _apply_subscriber_rules(
    conn: psycopg.Connection, queue: QueueInfo, ids: list[int], ruled: list[int]
) -> None:
    """Subscribers with a rule keep only the messages their rule is TRUE for, decided in SQL at
    enqueue (AQ decides a message's recipients when it is enqueued; an explicit recipient list
    overrides the rules). A message left with no recipient is refused, as with no subscriber."""
    rules = subscriber_rules(conn, queue)
    if not rules or not ruled:
        return
    parts, params = [], {"ids": ruled}
    for sub_id, condition in rules.items():
        sql, p = rule_sql(condition, field="rule", prefix=f"s{sub_id}_")
        parts.append(f"(mc.subscriber_id = {int(sub_id)} AND NOT (({sql}) IS TRUE))")
        params.update(p)
    conn.execute(
        f"""
        DELETE FROM aq_message_consumer mc USING aq_message m
        WHERE mc.message_id = m.id AND m.id = ANY(%(ids)s) AND ({" OR ".join(parts)})
        """,
        params,
    )
    counts = conn.execute(
        """
        WITH c AS (SELECT m.id, count(mc.id) AS n FROM aq_message m
                   LEFT JOIN aq_message_consumer mc ON mc.message_id = m.id
                   WHERE m.id = ANY(%s) GROUP BY m.id)
        UPDATE aq_message m SET pending_consumers = c.n FROM c WHERE m.id = c.id
        RETURNING m.id, c.n
        """,
        (ruled,),
    ).fetchall()
    empty = sorted(mid for mid, n in counts if n == 0)
    if empty:
        pos = ids.index(empty[0])
        where = "" if len(ids) == 1 else f" (messages[{pos}])"
        raise NoSubscribers(
            f"No subscriber of queue {queue.name} takes this message{where}: every subscriber's "
            "rule is FALSE or NULL for it.",
            field="queue" if len(ids) == 1 else f"messages[{pos}]",
        )


# --- dequeue -------------------------------------------------------------------------------------

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


_STAT_DEQ = """
stat AS (
    INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued)
    SELECT %(qid)s, pg_backend_pid() %% {shards}, 0, count(*) FROM {src} HAVING count(*) > 0
    ON CONFLICT (queue_id, shard) DO UPDATE SET dequeued = aq_queue_stat.dequeued + EXCLUDED.dequeued
)"""


def _stat(src: str) -> str:
    return _STAT_DEQ.replace("{shards}", str(STAT_SHARDS)).replace("{src}", src)


def dequeue(
    conn: psycopg.Connection,
    queue: QueueInfo,
    *,
    mode: str = REMOVE,
    navigation: str = NEXT_MESSAGE,
    consumer: str | None = None,
    correlation: str | None = None,
    msgid: int | None = None,
    batch: int = 1,
    wait: float = 0.0,
    after: Position | None = None,
    lease_seconds: float = DEFAULT_LEASE_S,
    listener: Listener | None = None,
    condition: str | None = None,
) -> list[DequeuedMessage]:
    """Take up to ``batch`` messages in the queue table's order.

    REMOVE consumes them, LOCKED leases them for ``lease_seconds`` (finish with :func:`ack` or
    :func:`release`), BROWSE only reads. NEXT_MESSAGE (the default, as in PL/SQL and OCI) continues
    after ``after``, the position of the previous call's last message; with no position it starts
    from the head, as the first NEXT_MESSAGE dequeue of an Oracle session does. FIRST_MESSAGE
    always starts from the head (strict order). Concurrent dequeuers skip each other's rows (SKIP LOCKED), so no message
    goes to two of them. With ``wait`` > 0 the call blocks up to that many seconds on the queue's
    LISTEN channel (``listener``) until a message arrives.
    """
    if mode not in (REMOVE, LOCKED, BROWSE):
        raise InvalidMessage(f"Unknown dequeue mode {mode!r}.", field="mode")
    if navigation not in (FIRST_MESSAGE, NEXT_MESSAGE):
        raise InvalidMessage(f"Unknown navigation {navigation!r}.", field="navigation")
    if not 1 <= batch <= 10_000:
        raise InvalidMessage("Batch size must be between 1 and 10000.", field="batch")
    if wait < 0:
        raise InvalidMessage("Wait cannot be negative.", field="wait")
    if mode != BROWSE and not queue.dequeue_enabled:
        raise QueueDisabled(f"Dequeue is disabled on queue {queue.name}.", field="queue")
    sub_id: int | None = None
    if queue.multiple_consumers and not queue.is_exception:
        if not consumer:
            raise InvalidMessage(
                f"Queue {queue.name} is multi-consumer: name the consumer.", field="consumer_name"
            )
        sub_id = subscriber_id(conn, queue, consumer)
    elif consumer and not queue.is_exception:
        raise InvalidMessage(
            f"Queue {queue.name} is single-consumer: dequeue without a consumer name.",
            field="consumer_name",
        )
    start_after = after if navigation == NEXT_MESSAGE else None
    if condition:
        rule_sql(condition, field="condition", prefix="dq_")

    def attempt() -> list[DequeuedMessage]:
        return _dequeue_once(
            conn,
            queue,
            mode=mode,
            sub_id=sub_id,
            correlation=correlation,
            msgid=msgid,
            batch=batch,
            after=start_after,
            lease_seconds=lease_seconds,
            condition=condition,
        )

    if wait <= 0:
        return attempt()
    if listener is None:
        raise InvalidMessage("A wait needs a listener connection.", field="wait")
    # LISTEN before looking, so a commit between the look and the wait still wakes us.
    listener.listen(queue.channel)
    deadline = listener.clock() + wait
    while True:
        found = attempt()
        if found:
            return found
        remaining = deadline - listener.clock()
        if remaining <= 0:
            return []
        # End the read so the next attempt sees the newly committed message in a fresh snapshot
        # when the caller runs us in autocommit-less code; with READ COMMITTED each statement
        # already takes a new snapshot.
        listener.wait(queue.channel, remaining)


def _dequeue_once(
    conn: psycopg.Connection,
    queue: QueueInfo,
    *,
    mode: str,
    sub_id: int | None,
    correlation: str | None,
    msgid: int | None,
    batch: int,
    after: Position | None,
    lease_seconds: float,
    condition: str | None = None,
) -> list[DequeuedMessage]:
    where, params = _candidate_filter(queue, correlation=correlation, msgid=msgid, after=after)
    if condition:
        # AQ's deq_condition: only messages the rule condition is TRUE for (NULL is not TRUE).
        sql, cparams = rule_sql(condition, field="condition", prefix="dq_")
        where += f" AND (({sql}) IS TRUE)"
        params.update(cparams)
    params["n"] = batch
    order = "m.sort_pri, m.commit_seq, m.id"
    if sub_id is not None:
        return _dequeue_consumer(conn, queue, mode, sub_id, where, params, order, lease_seconds)

    if mode == BROWSE:
        # A browse must not hand out another dequeuer's lease token.
        cols = _COLUMNS.replace("m.lock_token", "NULL::uuid")
        sql = f"SELECT {cols} FROM aq_message m WHERE {where} ORDER BY {order} LIMIT %(n)s"
        return [_row_to_message(r) for r in conn.execute(sql, params, prepare=True).fetchall()]

    claim = (
        f"c AS (SELECT m.id FROM aq_message m WHERE {where} AND m.locked_until IS NULL "
        f"ORDER BY {order} LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
    )
    if mode == LOCKED:
        params["lease"] = lease_seconds
        sql = (
            f"WITH {claim} UPDATE aq_message m SET locked_until = now() + "
            f"make_interval(secs => %(lease)s), lock_token = gen_random_uuid() FROM c "
            f"WHERE m.id = c.id RETURNING {_COLUMNS}"
        )
    elif queue.retention_time > 0 and not queue.is_exception:
        sql = (
            f"WITH {claim}, d AS (UPDATE aq_message m SET state = 'PROCESSED', "
            f"processed_at = now() FROM c WHERE m.id = c.id RETURNING {_COLUMNS}), "
            f"{_stat('d')} SELECT * FROM d"
        )
    else:
        sql = (
            f"WITH {claim}, gone AS (DELETE FROM aq_message_consumer mc USING c "
            f"WHERE mc.message_id = c.id), d AS (DELETE FROM aq_message m USING c "
            f"WHERE m.id = c.id RETURNING {_COLUMNS}), {_stat('d')} SELECT * FROM d"
        )
        if not queue.is_exception:
            # Single-consumer messages have no consumer rows; skip the extra delete.
            sql = sql.replace(
                ", gone AS (DELETE FROM aq_message_consumer mc USING c WHERE mc.message_id = c.id)",
                "",
            )
    rows = conn.execute(sql, params, prepare=True).fetchall()
    out = [_row_to_message(r) for r in rows]
    out.sort(key=lambda m: (m.position.sort_pri, m.position.commit_seq, m.id))
    return out


def _dequeue_consumer(
    conn: psycopg.Connection,
    queue: QueueInfo,
    mode: str,
    sub_id: int,
    where: str,
    params: dict[str, Any],
    order: str,
    lease_seconds: float,
) -> list[DequeuedMessage]:
    params["sub"] = sub_id
    # A consumer row with a lock_token is leased; one with only locked_until waits out a retry delay.
    free = "(mc.locked_until IS NULL OR (mc.lock_token IS NULL AND mc.locked_until <= now()))"
    base = (
        f"FROM aq_message_consumer mc JOIN aq_message m ON m.id = mc.message_id "
        f"WHERE mc.subscriber_id = %(sub)s AND {where}"
    )
    if mode == BROWSE:
        cols = _COLUMNS.replace("m.lock_token", "NULL::uuid")
        sql = f"SELECT {cols} {base} ORDER BY {order} LIMIT %(n)s"
        return [_row_to_message(r) for r in conn.execute(sql, params, prepare=True).fetchall()]
    claim = (
        f"c AS (SELECT mc.id AS cid, m.id AS mid {base} AND {free} ORDER BY {order} "
        f"LIMIT %(n)s FOR UPDATE OF mc SKIP LOCKED)"
    )
    if mode == LOCKED:
        params["lease"] = lease_seconds
        sql = (
            f"WITH {claim}, l AS (UPDATE aq_message_consumer mc SET locked_until = now() + "
            f"make_interval(secs => %(lease)s), lock_token = gen_random_uuid() FROM c "
            f"WHERE mc.id = c.cid RETURNING mc.message_id, mc.lock_token) "
            f"SELECT {_COLUMNS.replace('m.lock_token', 'l.lock_token')} "
            f"FROM l JOIN aq_message m ON m.id = l.message_id"
        )
        rows = conn.execute(sql, params, prepare=True).fetchall()
    else:
        sql = (
            f"WITH {claim}, d AS (DELETE FROM aq_message_consumer mc USING c WHERE mc.id = c.cid "
            f"RETURNING mc.message_id) {_finish_consumed_sql('d')}"
        )
        rows = conn.execute(sql, params, prepare=True).fetchall()
    out = [_row_to_message(r) for r in rows]
    out.sort(key=lambda m: (m.position.sort_pri, m.position.commit_seq, m.id))
    return out


def _finish_consumed_sql(src: str) -> str:
    """Count down the pending consumers of the messages in ``src``; the last one processes it.

    The UPDATE locks the message row, so two subscribers finishing the same message at once are
    serialised and exactly one of them sees the count reach zero.
    """
    return (
        f", u AS (UPDATE aq_message m SET pending_consumers = m.pending_consumers - 1, "
        f"state = CASE WHEN m.pending_consumers = 1 THEN 'PROCESSED' ELSE m.state END, "
        f"processed_at = CASE WHEN m.pending_consumers = 1 THEN now() END "
        f"FROM {src} WHERE m.id = {src}.message_id RETURNING {_COLUMNS}), "
        f"{_stat('u')} SELECT * FROM u"
    )


# --- transfer: a subscriber's batch moved into another queue, all in SQL ------------------------


@dataclass(frozen=True)
class TransferResult:
    taken: int  # the subscriber's copies consumed at the source
    moved: int  # messages enqueued at the destination
    bytes: int  # payload bytes moved


def transfer(
    conn: psycopg.Connection,
    source: QueueInfo,
    sub_id: int,
    destination: QueueInfo,
    *,
    batch: int,
    keep_sql: str = "TRUE",
    keep_params: dict[str, Any] | None = None,
    user: str = "",
) -> TransferResult:
    """Consume up to ``batch`` of subscriber ``sub_id``'s messages at ``source`` (in order) and
    enqueue those for which ``keep_sql`` (a boolean over ``aq_message m``, never NULL) is TRUE
    into ``destination``, in one statement of the caller's transaction: what a propagation does
    when its rules compile to SQL and transform nothing. The copies keep priority, correlation,
    sender, kind, type and payload; their headers gain ``aq$_source_msgid``.

    The destination must take every message as it is: a single-consumer queue, or a
    multi-consumer one whose subscribers have no rules (the caller checks; a subscriber rule
    could refuse a message, which needs the one-by-one path). No subscriber at all is refused
    with NoSubscribers, nothing consumed."""
    state = conn.execute(
        "SELECT (SELECT dequeue_enabled FROM queues_queue WHERE id = %s), "
        "(SELECT enqueue_enabled AND kind = 'NORMAL_QUEUE' FROM queues_queue WHERE id = %s)",
        (source.id, destination.id),
    ).fetchone()
    if not state or not state[0]:
        raise QueueDisabled(f"Dequeue is disabled on queue {source.name}.", field="queue")
    if not state[1]:
        raise QueueDisabled(f"Enqueue is disabled on queue {destination.name}.", field="queue")
    subs: list[int] = []
    if destination.multiple_consumers:
        subs = list(subscriber_ids(conn, destination).values())
        if not subs:
            raise NoSubscribers(
                f"Queue {destination.name} has no subscribers: a message nobody can dequeue is "
                "refused.",
                field="queue",
            )
    params: dict[str, Any] = {
        "qid": source.id,
        "sub": sub_id,
        "n": batch,
        "dqid": destination.id,
        "dqt": destination.queue_table_id,
        "by_pri": 1 if destination.by_priority else 0,
        "cseq": None if destination.commit_time else 0,
        "npend": len(subs),
        "subs": subs,
        "user": user,
        "channel": destination.channel,
        **(keep_params or {}),
    }
    where, _ = _candidate_filter(source, correlation=None, msgid=None, after=None)
    free = "(mc.locked_until IS NULL OR (mc.lock_token IS NULL AND mc.locked_until <= now()))"
    sql = f"""
    WITH c AS (
        SELECT mc.id AS cid FROM aq_message_consumer mc JOIN aq_message m ON m.id = mc.message_id
        WHERE mc.subscriber_id = %(sub)s AND {where} AND {free}
        ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT %(n)s FOR UPDATE OF mc SKIP LOCKED
    ),
    d AS (DELETE FROM aq_message_consumer mc USING c WHERE mc.id = c.cid RETURNING mc.message_id),
    u AS (
        UPDATE aq_message m SET pending_consumers = m.pending_consumers - 1,
               state = CASE WHEN m.pending_consumers = 1 THEN 'PROCESSED' ELSE m.state END,
               processed_at = CASE WHEN m.pending_consumers = 1 THEN now() END
        FROM d WHERE m.id = d.message_id
        RETURNING m.id, m.priority, m.sort_pri, m.commit_seq, m.kind, m.type_name,
                  m.correlation, m.sender, m.headers, m.payload
    ),
    {_stat("u")},
    k AS (SELECT m.*, ({keep_sql}) AS keep FROM u AS m),
    ins AS (
        INSERT INTO aq_message (queue_id, queue_table_id, state, priority, sort_pri, commit_seq,
                                kind, type_name, correlation, sender, headers, payload, enq_time,
                                enq_user, attempts, pending_consumers, exception_reason, replayed)
        SELECT %(dqid)s, %(dqt)s, 'READY', k.priority, %(by_pri)s * k.priority, %(cseq)s, k.kind,
               k.type_name, k.correlation, k.sender,
               k.headers || jsonb_build_object('aq$_source_msgid', k.id), k.payload, now(),
               %(user)s, 0, %(npend)s, '', false
        FROM k WHERE k.keep ORDER BY k.sort_pri, k.commit_seq, k.id
        RETURNING id, octet_length(payload::text) AS size
    ),
    cons AS (
        INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts)
        SELECT ins.id, s.sub, 0 FROM ins CROSS JOIN unnest(%(subs)s::bigint[]) AS s(sub)
    ),
    dstat AS (
        INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued)
        SELECT %(dqid)s, pg_backend_pid() %% {STAT_SHARDS}, count(*), 0 FROM ins
        HAVING count(*) > 0
        ON CONFLICT (queue_id, shard)
        DO UPDATE SET enqueued = aq_queue_stat.enqueued + EXCLUDED.enqueued
    )
    SELECT (SELECT count(*) FROM u), count(*), coalesce(sum(size), 0),
           CASE WHEN count(*) > 0 THEN pg_notify(%(channel)s, '') END
    FROM ins
    """
    taken, moved, size, _ = conn.execute(sql, params, prepare=True).fetchone()
    return TransferResult(int(taken), int(moved), int(size))


# --- leases: ack and release ---------------------------------------------------------------------


def ack(
    conn: psycopg.Connection,
    queue: QueueInfo,
    msgid: int,
    token: UUID | str,
    *,
    consumer: str | None = None,
) -> DequeuedMessage:
    """Finish a LOCKED dequeue as a REMOVE."""
    if queue.multiple_consumers and not queue.is_exception:
        sub = subscriber_id(conn, queue, consumer or "")
        sql = (
            "WITH d AS (DELETE FROM aq_message_consumer mc WHERE mc.message_id = %(mid)s AND "
            "mc.subscriber_id = %(sub)s AND mc.lock_token = %(tok)s RETURNING mc.message_id)"
            + _finish_consumed_sql("d")
        )
        rows = conn.execute(sql, {"mid": msgid, "sub": sub, "tok": str(token), "qid": queue.id})
    elif queue.retention_time > 0 and not queue.is_exception:
        sql = (
            f"WITH d AS (UPDATE aq_message m SET state = 'PROCESSED', processed_at = now(), "
            f"locked_until = NULL, lock_token = NULL WHERE m.id = %(mid)s AND m.queue_id = %(qid)s "
            f"AND m.lock_token = %(tok)s RETURNING {_COLUMNS}), {_stat('d')} SELECT * FROM d"
        )
        rows = conn.execute(sql, {"mid": msgid, "tok": str(token), "qid": queue.id})
    else:
        sql = (
            f"WITH gone AS (DELETE FROM aq_message_consumer WHERE message_id = %(mid)s), "
            f"d AS (DELETE FROM aq_message m WHERE m.id = %(mid)s AND m.queue_id = %(qid)s "
            f"AND m.lock_token = %(tok)s RETURNING {_COLUMNS}), {_stat('d')} SELECT * FROM d"
        )
        rows = conn.execute(sql, {"mid": msgid, "tok": str(token), "qid": queue.id})
    row = rows.fetchone()
    if row is None:
        raise LeaseMismatch(
            f"Message {msgid} is not locked with that token (the lease ran out or it was "
            "already acknowledged).",
            field="lock_token",
        )
    return _row_to_message(row)


def release(
    conn: psycopg.Connection,
    queue: QueueInfo,
    msgid: int,
    token: UUID | str,
    *,
    consumer: str | None = None,
    failed: bool = True,
) -> None:
    """Give a LOCKED message back. ``failed`` counts an attempt (retry delay, exception queue)."""
    if queue.multiple_consumers and not queue.is_exception:
        sub = subscriber_id(conn, queue, consumer or "")
        row = conn.execute(
            "SELECT id FROM aq_message_consumer WHERE message_id = %s AND subscriber_id = %s "
            "AND lock_token = %s FOR UPDATE",
            (msgid, sub, str(token)),
        ).fetchone()
        if row is None:
            raise LeaseMismatch(
                f"Message {msgid} is not locked with that token.", field="lock_token"
            )
        # Hand the lease back first: counting an attempt leaves rows under a live lease alone.
        conn.execute(
            "UPDATE aq_message_consumer SET locked_until = NULL, lock_token = NULL WHERE id = %s",
            (row[0],),
        )
        if failed:
            fail_consumer_attempts(conn, [row[0]])
        return
    row = conn.execute(
        "SELECT id FROM aq_message WHERE id = %s AND queue_id = %s AND lock_token = %s FOR UPDATE",
        (msgid, queue.id, str(token)),
    ).fetchone()
    if row is None:
        raise LeaseMismatch(f"Message {msgid} is not locked with that token.", field="lock_token")
    conn.execute(
        "UPDATE aq_message SET locked_until = NULL, lock_token = NULL WHERE id = %s", (msgid,)
    )
    if failed:
        fail_attempts(conn, [msgid])


def fail_attempts(conn: psycopg.Connection, ids: Sequence[int]) -> list[int]:
    """Count a failed attempt on single-consumer messages (a rolled-back dequeue or a failed
    release). ``retry_delay`` defers the next try; past ``max_retries`` the message moves to its
    queue's exception queue. Returns the ids moved there.

    A message under a live lease is left alone: after a rolled-back dequeue another consumer may
    have leased it before the attempt is counted, and clearing that lease would hand it out twice.
    """
    if not ids:
        return []
    rows = conn.execute(
        """
        UPDATE aq_message m SET attempts = m.attempts + 1, locked_until = NULL, lock_token = NULL,
               state = CASE WHEN q.retry_delay > 0 THEN 'WAITING' ELSE 'READY' END,
               delay_until = CASE WHEN q.retry_delay > 0
                                  THEN now() + make_interval(secs => q.retry_delay) END
        FROM queues_queue q
        WHERE q.id = m.queue_id AND m.id = ANY(%s) AND m.state IN ('READY', 'WAITING')
          AND (m.lock_token IS NULL OR m.locked_until <= now())
        RETURNING m.id, m.attempts > q.max_retries
        """,
        (list(ids),),
    ).fetchall()
    over = [mid for mid, exceeded in rows if exceeded]
    move_to_exception_queue(conn, over, REASON_MAX_RETRIES)
    return over


def fail_consumer_attempts(conn: psycopg.Connection, consumer_row_ids: Sequence[int]) -> None:
    """The multi-consumer form of :func:`fail_attempts`: the attempt counts for one subscriber.
    Past ``max_retries`` that subscriber's copy goes to the exception queue, named in the reason."""
    if not consumer_row_ids:
        return
    rows = conn.execute(
        """
        UPDATE aq_message_consumer mc SET attempts = mc.attempts + 1, lock_token = NULL,
               locked_until = CASE WHEN q.retry_delay > 0
                                   THEN now() + make_interval(secs => q.retry_delay) END
        FROM aq_message m JOIN queues_queue q ON q.id = m.queue_id
        WHERE mc.id = ANY(%s) AND m.id = mc.message_id
          AND (mc.lock_token IS NULL OR mc.locked_until <= now())  -- see fail_attempts
        RETURNING mc.id, mc.attempts > q.max_retries
        """,
        (list(consumer_row_ids),),
    ).fetchall()
    over = [cid for cid, exceeded in rows if exceeded]
    if not over:
        return
    taken = conn.execute(
        """
        WITH d AS (DELETE FROM aq_message_consumer mc WHERE mc.id = ANY(%s)
                   RETURNING mc.message_id, mc.subscriber_id, mc.attempts)
        SELECT d.message_id, d.subscriber_id, d.attempts FROM d
        """,
        (over,),
    ).fetchall()
    consumer_exception_copies(
        conn,
        [t[0] for t in taken],
        [t[1] for t in taken],
        [REASON_MAX_RETRIES] * len(taken),
        attempts=[t[2] for t in taken],
        consumed=False,
    )


def consumer_exception_copies(
    conn: psycopg.Connection,
    message_ids: Sequence[int],
    subscriber_ids: Sequence[int],
    reasons: Sequence[str],
    *,
    attempts: Sequence[int] | None = None,
    consumed: bool = True,
) -> None:
    """Put one subscriber's copy of each message into the source queue's exception queue, with a
    reason that names the subscriber. The copy keeps a consumer row for that subscriber, so a
    replay returns it to that subscriber (and only to it).

    ``consumed``: the subscriber's consumer row is already gone and counted down (a REMOVE
    dequeue did it, as a propagation does); otherwise count the originals down here."""
    if not message_ids:
        return
    conn.execute(
        """
        WITH n AS (SELECT x.message_id, x.subscriber_id, x.reason, x.attempts,
                          nextval(pg_get_serial_sequence('aq_message', 'id')) AS copy_id
                   FROM unnest(%(mids)s::bigint[], %(sids)s::bigint[], %(reasons)s::text[],
                               %(attempts)s::int[])
                        AS x(message_id, subscriber_id, reason, attempts)),
        copy AS (
            INSERT INTO aq_message (id, queue_id, queue_table_id, state, priority, sort_pri,
                commit_seq, kind, type_name, correlation, sender, headers, payload, enq_time,
                enq_user, expiration, attempts, pending_consumers, original_queue_id,
                exception_reason, replayed)
            SELECT n.copy_id, q.exception_queue_id, m.queue_table_id, 'EXPIRED', m.priority,
                   m.sort_pri, m.commit_seq, m.kind, m.type_name, m.correlation, m.sender,
                   m.headers, m.payload, m.enq_time, m.enq_user, m.expiration,
                   coalesce(n.attempts, m.attempts), 1, m.queue_id,
                   n.reason || ' (consumer ' || s.name || ')', false
            FROM n JOIN aq_message m ON m.id = n.message_id
            JOIN queues_queue q ON q.id = m.queue_id
            JOIN queues_subscriber s ON s.id = n.subscriber_id
        )
        INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts)
        SELECT n.copy_id, n.subscriber_id, 0 FROM n
        """,
        {
            "mids": list(message_ids),
            "sids": list(subscriber_ids),
            "reasons": list(reasons),
            # The subscriber's own count of attempts, when the copy goes for too many of them.
            "attempts": list(attempts) if attempts is not None else [None] * len(message_ids),
        },
    )
    if consumed:
        return
    conn.execute(
        """
        UPDATE aq_message m SET pending_consumers = m.pending_consumers - x.n,
               state = CASE WHEN m.pending_consumers = x.n THEN 'PROCESSED' ELSE m.state END,
               processed_at = CASE WHEN m.pending_consumers = x.n THEN now() END
        FROM (SELECT message_id, count(*) AS n FROM unnest(%s::bigint[]) AS t(message_id)
              GROUP BY message_id) x
        WHERE m.id = x.message_id
        """,
        (list(message_ids),),
    )


def move_to_exception_queue(conn: psycopg.Connection, ids: Sequence[int], reason: str) -> int:
    """Move messages to their queue's exception queue with state EXPIRED and ``reason``."""
    if not ids:
        return 0
    cur = conn.execute(
        """
        UPDATE aq_message m SET original_queue_id = m.queue_id, queue_id = q.exception_queue_id,
               state = 'EXPIRED', exception_reason = %s, delay_until = NULL, locked_until = NULL,
               lock_token = NULL
        FROM queues_queue q
        WHERE q.id = m.queue_id AND m.id = ANY(%s) AND q.exception_queue_id IS NOT NULL
        """,
        (reason, list(ids)),
    )
    return cur.rowcount


# --- exception queue replay and purge ------------------------------------------------------------


def replay(conn: psycopg.Connection, queue: QueueInfo, ids: Sequence[int] | None) -> list[int]:
    """Move messages of exception queue ``queue`` back to their original queues, marked replayed.

    Commit-time queues get a new commit sequence at commit (the trigger fires on commit_seq =
    NULL), so a replayed message joins the tail of its queue's order.
    """
    if not queue.is_exception:
        raise InvalidMessage(f"{queue.name} is not an exception queue.", field="queue")
    sel = "m.queue_id = %(qid)s AND m.state = 'EXPIRED'"
    params: dict[str, Any] = {"qid": queue.id}
    if ids is not None:
        sel += " AND m.id = ANY(%(ids)s)"
        params["ids"] = list(ids)
        orphan = conn.execute(
            f"SELECT m.id FROM aq_message m WHERE {sel} AND m.original_queue_id IS NULL LIMIT 1",
            params,
        ).fetchone()
        if orphan:
            raise InvalidMessage(
                f"Message {orphan[0]} has no original queue to go back to.", field="ids"
            )
    rows = conn.execute(
        f"""
        WITH c AS (SELECT m.id FROM aq_message m WHERE {sel} AND m.original_queue_id IS NOT NULL
                   FOR UPDATE SKIP LOCKED)
        UPDATE aq_message m SET queue_id = m.original_queue_id, original_queue_id = NULL,
               -- A multi-consumer message whose subscribers have all gone is done, not READY
               -- for nobody.
               state = CASE WHEN qt.multiple_consumers AND m.pending_consumers = 0
                            THEN 'PROCESSED' ELSE 'READY' END,
               processed_at = CASE WHEN qt.multiple_consumers AND m.pending_consumers = 0
                                   THEN now() END,
               attempts = 0, replayed = true, exception_reason = '',
               locked_until = NULL, lock_token = NULL, delay_until = NULL,
               commit_seq = CASE WHEN qt.sort_order LIKE '%%commit_time' THEN NULL ELSE 0 END,
               expire_at = CASE WHEN m.expiration IS NOT NULL
                                THEN now() + make_interval(secs => m.expiration) END
        FROM c, queues_queuetable qt
        WHERE m.id = c.id AND qt.id = m.queue_table_id
        RETURNING m.id, m.queue_id
        """,
        params,
    ).fetchall()
    conn.execute(
        "UPDATE aq_message_consumer SET attempts = 0, locked_until = NULL, lock_token = NULL "
        "WHERE message_id = ANY(%s)",
        ([r[0] for r in rows],),
    )
    for qid in {r[1] for r in rows}:
        conn.execute("SELECT pg_notify(%s, '')", (channel_name(qid),))
    return sorted(r[0] for r in rows)


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


# --- the queue monitor (timers) ------------------------------------------------------------------


@dataclass
class MonitorReport:
    made_ready: int = 0
    expired: int = 0
    leases_released: int = 0
    removed: int = 0

    def as_dict(self) -> dict[str, int]:
        return self.__dict__.copy()


def monitor_run(conn: psycopg.Connection, *, limit: int = 10_000) -> MonitorReport:
    """One pass of AQ's queue monitor. Every step claims rows with SKIP LOCKED and checks its
    condition again in the UPDATE, so two monitors running at once neither clash nor double-count."""
    report = MonitorReport()
    rows = conn.execute(
        """
        WITH c AS (SELECT id FROM aq_message WHERE state = 'WAITING' AND delay_until <= now()
                   ORDER BY delay_until LIMIT %s FOR UPDATE SKIP LOCKED)
        UPDATE aq_message m SET state = 'READY', delay_until = NULL FROM c
        WHERE m.id = c.id AND m.state = 'WAITING' RETURNING m.queue_id
        """,
        (limit,),
    ).fetchall()
    report.made_ready = len(rows)
    woken = {r[0] for r in rows}

    expired = conn.execute(
        """
        SELECT id FROM aq_message WHERE state = 'READY' AND expire_at <= now()
        AND locked_until IS NULL ORDER BY expire_at LIMIT %s FOR UPDATE SKIP LOCKED
        """,
        (limit,),
    ).fetchall()
    report.expired = move_to_exception_queue(conn, [r[0] for r in expired], REASON_EXPIRED)

    leased = conn.execute(
        """
        SELECT id FROM aq_message WHERE locked_until < now() AND lock_token IS NOT NULL
        LIMIT %s FOR UPDATE SKIP LOCKED
        """,
        (limit,),
    ).fetchall()
    fail_attempts(conn, [r[0] for r in leased])
    leased_c = conn.execute(
        """
        SELECT id FROM aq_message_consumer WHERE locked_until < now() AND lock_token IS NOT NULL
        LIMIT %s FOR UPDATE SKIP LOCKED
        """,
        (limit,),
    ).fetchall()
    fail_consumer_attempts(conn, [r[0] for r in leased_c])
    report.leases_released = len(leased) + len(leased_c)
    woken |= {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT queue_id FROM aq_message WHERE id = ANY(%s)", ([r[0] for r in leased],)
        ).fetchall()
    }

    report.removed = conn.execute(
        """
        WITH c AS (SELECT m.id FROM aq_message m JOIN queues_queue q ON q.id = m.queue_id
                   WHERE m.state = 'PROCESSED'
                   AND m.processed_at + make_interval(secs => q.retention_time) <= now()
                   LIMIT %s FOR UPDATE OF m SKIP LOCKED),
        gone AS (DELETE FROM aq_message_consumer mc USING c WHERE mc.message_id = c.id)
        DELETE FROM aq_message m USING c WHERE m.id = c.id
        """,
        (limit,),
    ).rowcount
    for qid in woken:
        conn.execute("SELECT pg_notify(%s, '')", (channel_name(qid),))
    return report


# --- waiting: LISTEN/NOTIFY ----------------------------------------------------------------------


class Listener:
    """A dedicated autocommit connection that LISTENs on queue channels, so a dequeue can block
    until an enqueue commits instead of polling. One per thread; cheap to keep open."""

    def __init__(
        self, conninfo: str | None = None, *, connection: psycopg.Connection | None = None
    ):
        self.conn = connection or psycopg.connect(conninfo or "", autocommit=True)
        self._channels: set[str] = set()

    @staticmethod
    def clock() -> float:
        import time

        return time.monotonic()

    def listen(self, channel: str) -> None:
        if channel not in self._channels:
            self.conn.execute(f'LISTEN "{channel}"')
            self._channels.add(channel)

    def wait(self, channel: str, timeout: float) -> bool:
        """Block until a notification on ``channel`` or ``timeout`` seconds; True if notified."""
        for note in self.conn.notifies(timeout=max(timeout, 0.001), stop_after=1):
            if note.channel == channel:
                return True
        return False

    def close(self) -> None:
        self.conn.close()


_local = threading.local()


def thread_listener(conninfo: str) -> Listener:
    """The calling thread's listener for ``conninfo``, opened on first use."""
    listener = getattr(_local, "listener", None)
    if listener is None or listener.conn.closed:
        listener = Listener(conninfo)
        _local.listener = listener
    return listener
