"""Enqueue: messages inserted in the caller's transaction, with their recipients."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import psycopg

from core.storable import encode_json
from queues.engine import buffered as buf
from queues.engine import cursors
from queues.engine.buffered import PUBLISHING
from queues.engine.grouping import stamp_groups
from queues.engine.sets import (
    COUNTED,
    COUNTER_ROWS,
    apply_subscriber_rules,
    buffer_enqueue_stat_sql,
    count_missed,
    counter_key,
    stat_sql,
    stat_update_sql,
)
from queues.engine.storage import consumer_leaf, message_leaf
from queues.engine.topology import queue_info, subscriber_ids, subscriber_rules
from queues.engine.types import (
    BUFFERED,
    CHANNEL_PREFIX,
    PERSISTENT,
    STAT_SHARDS,
    USER,
    InvalidMessage,
    NewMessage,
    NoSubscribers,
    QueueDisabled,
    QueueInfo,
)
from queues.engine.validation import validate_message

_ENQUEUE_TEMPLATE = """
WITH q AS (
    SELECT id, queue_table_id FROM queues_queue
    WHERE id = %(qid)s AND enqueue_enabled AND kind = 'NORMAL_QUEUE'
),
m AS ({source}),
ins AS (
    INSERT INTO {messages} (queue_id, queue_table_id, state, priority, sort_pri, commit_seq, kind,
                            type_name, correlation, sender, headers, payload, enq_time, enq_user,
                            delay_until, expiration, expire_at, attempts, pending_consumers,
                            exception_reason, replayed, delivery_mode, in_buffer{prop_names})
    SELECT q.id, q.queue_table_id,
           CASE WHEN {delay} > 0 THEN 'WAITING' ELSE 'READY' END,
           {pri}, {sort_pri}, {cseq}, {kind}, {tname}, {corr}, {sender}, {headers},
           {payload}, now(), %(user)s,
           CASE WHEN {delay} > 0 THEN now() + make_interval(secs => {delay}) END,
           {exp},
           CASE WHEN {exp} IS NOT NULL THEN now() + make_interval(secs => {delay} + {exp}) END,
           0, {npend}, '', false, {mode}, {in_buffer}{prop_vals}
    FROM q CROSS JOIN m ORDER BY m.ord
    RETURNING id, sender, payload IS NULL AS padded
),
{recipients}{stat}
SELECT array_agg(id ORDER BY id), pg_notify(%(channel)s, ''), {counted},
       -- One JSON value per message, or the statement fails and nothing is kept: a payload
       -- given as raw JSON text (an orjson.Fragment, core/storable.py) could make the joined
       -- array hold more values or fewer (ROWS FROM pads the shorter side with NULLs).
       CASE WHEN count(*) > 0 AND (count(*) <> %(n)s OR bool_or(padded))
            THEN aq_refuse(format('The payloads make %%s JSON values for %%s messages: a payload '
                                  'is raw JSON text that is not one value.', count(*), %(n)s))
       END
FROM ins
"""
# The messages' payloads come as one JSON array, built from the texts validation made (no payload
# is encoded twice), read as jsonb: one parse of the array, its elements stored as they are
# (json_array_elements, then a cast of each element, lexes every payload three times). The
# properties the messages set (_set_values) come as a second JSON array of records, zipped by
# ROWS FROM, each record holding only what its message sets (a property some message of the batch
# sets is read from the records, its default where a record leaves it out); the others are
# constants in the text, as in the one-row statement below, so a batch of plain payloads sends no
# records. The statement for 100 plain payloads,
# fsync on, 12 interleaved rounds: 1.35 ms against 1.54 ms as json and 1.74 ms with every
# property as a record (docs/BENCHMARKS.md). The records stay json: a jsonb parameter is parsed
# into a tree before json_to_recordset reads it.
_PAYLOADS = "jsonb_array_elements(%(payloads)s::jsonb)"
# A jsonb value holds at most 256 MB, and its binary form can be several times its text (an
# array of small numbers: a 4-byte entry and a numeric for each 2 bytes of text): a batch whose
# payloads' text is longer than this many characters (up to 4 bytes each in UTF-8) is read as
# json, each payload becoming jsonb on its own.
JSONB_BATCH_MAX = 32 * 1024 * 1024
_PAYLOADS_JSON = "json_array_elements(%(payloads)s::json)"
_RECORDS = """SELECT * FROM ROWS FROM (
             json_to_recordset(%(msgs)s::json) AS ({types}),
             {payloads})
         WITH ORDINALITY AS m({names}, payload, ord)"""
# Recipients of a multi-consumer queue's messages: (position in the batch, subscriber) pairs.
_RECIPIENTS = """numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS ord FROM ins),
cons AS (
    INSERT INTO {consumers} (message_id, subscriber_id, attempts, queue_table_id, in_buffer)
    SELECT numbered.id, r.sub, 0, %(qt)s, {in_buffer} FROM numbered
    JOIN unnest(%(r_ord)s::int[], %(r_sub)s::bigint[]) AS r(ord, sub) ON r.ord = numbered.ord
),
"""
# A message's optional properties, as _set_values names them in a one-row statement's parameters
# and a batch's records: (name, SQL type, the default's constant).
_OPTIONAL = (
    ("pri", "int", "1"),
    ("delay", "float8", "0::float8"),
    ("exp", "float8", "NULL::float8"),
    ("corr", "text", "''"),
    ("sender", "text", "''"),
    ("headers", "jsonb", "'{}'::jsonb"),
    ("kind", "text", f"'{USER}'"),
    ("tname", "text", "''"),
)
# A batch's records also carry each message's recipient count on a multi-consumer queue.
_BATCH_OPTIONAL = (*_OPTIONAL, ("npend", "int", "0"))
_STAT_PERSISTENT = f"stat AS ({stat_sql('qid', 'ins', 'enqueued')})"
_STAT_UPDATE = f"stat AS ({stat_update_sql('qid', 'ins', 'enqueued')})"
# Buffered enqueues count per publisher (sender) in the buffer's UNLOGGED counters.
_STAT_BUFFERED = f"stat AS ({buffer_enqueue_stat_sql('qid', 'ins')})"


# One message on a single-consumer queue (the commonest call): a one-row INSERT ... SELECT into
# the queue table's leaf (the logged one, or the buffer for a buffered message). The set-based
# statement above pays for ROWS FROM/unnest, jsonb_array_elements and the consumer CTE even for
# one row (+14-18% single enqueues per second with one commit each, docs/BENCHMARKS.md "Issue 13
# engine changes"). Its parameters are the queue, the payload and only the properties that
# differ from their defaults; the rest are constants in the text ({pri}, {delay}, ...; see
# _enqueue_one_sql), and so are the queue table's orderings (priority, commit time): 14
# parameters cost the client about what PGMQ's whole send call costs it (docs/BENCHMARKS.md
# "Issue 13: the single enqueue's parameters, its counter row, and one JSON encoder").
_ENQUEUE_ONE_TEMPLATE = """
WITH ins AS (
    INSERT INTO {messages} (queue_id, queue_table_id, state, priority, sort_pri, commit_seq, kind,
                            type_name, correlation, sender, headers, payload, enq_time, enq_user,
                            delay_until, expiration, expire_at, attempts, pending_consumers,
                            exception_reason, replayed{mode_cols}{prop_names})
    SELECT q.id, q.queue_table_id,
           CASE WHEN {delay} > 0 THEN 'WAITING' ELSE 'READY' END,
           {pri}, {sort_pri}, {cseq}, {kind}, {tname}, {corr}, {sender}, {headers},
           %(payload)s::jsonb, now(), {user},
           CASE WHEN {delay} > 0 THEN now() + make_interval(secs => {delay}) END,
           {exp},
           CASE WHEN {exp} IS NOT NULL THEN now() + make_interval(secs => {delay} + {exp}) END,
           0, 0, '', false{mode_vals}{prop_one}
    FROM queues_queue q
    WHERE q.id = %(qid)s AND q.enqueue_enabled AND q.kind = 'NORMAL_QUEUE'
    RETURNING id
),
{stat}
SELECT id, pg_notify('{channel_prefix}' || %(qid)s::bigint, ''), {counted} FROM ins
"""
_STAT_ONE_PERSISTENT = """stat AS (
    INSERT INTO aq_queue_stat (queue_id, shard, enqueued, dequeued)
    SELECT %(qid)s, pg_backend_pid() %% {shards}, 1, 0 FROM ins
    ON CONFLICT (queue_id, shard) DO UPDATE SET enqueued = aq_queue_stat.enqueued + 1
)"""
# The same when this backend's counter row of the queue is known to exist (sets.COUNTER_ROWS).
_STAT_ONE_UPDATE = f"stat AS ({stat_update_sql('qid', 'ins', 'enqueued', amount='1')})"
_STAT_ONE_BUFFERED = f"""stat AS (
    INSERT INTO aq_buffer_stat AS s (queue_id, sender, shard, enqueued, last_msgid, last_enq,
                                     state, state_at)
    SELECT %(qid)s, {{sender}}, pg_backend_pid() %% {{shards}}, 1, ins.id, now(),
           '{PUBLISHING}', now()
    FROM ins
    ON CONFLICT (queue_id, sender, shard) DO UPDATE SET enqueued = s.enqueued + 1,
        last_msgid = EXCLUDED.last_msgid, last_enq = EXCLUDED.last_enq,
        state = EXCLUDED.state, state_at = EXCLUDED.state_at
)"""
# A one-row statement also takes the enqueuing user as an optional parameter.
_ONE_OPTIONAL = (*_OPTIONAL, ("user", "text", "''"))


# Origin site, route and tag (docs/SITES.md): only a statement for messages that carry one names
# these columns, so a plain enqueue's statement and its parameters are what they were.
_PROP_NAMES = ", origin_site, route, tag"
# Their columns in a batch's records.
_PROP_COLUMNS = ("origin_site text", "route text[]", "tag text")
# An empty RAW is NULL, as in Oracle.
_PROP_VALS = ", m.origin_site, m.route, nullif(decode(m.tag, 'hex'), ''::bytea)"
_PROP_ONE = ", %(origin)s::text, %(route)s::text[], nullif(decode(%(tag)s::text, 'hex'), ''::bytea)"


def _props(sql: str, props: bool, *, one: bool = False) -> str:
    if not props:
        return (
            sql.replace("{prop_names}", "").replace("{prop_vals}", "").replace("{prop_one}", "")
        )  # fmt: skip
    return (
        sql.replace("{prop_names}", _PROP_NAMES).replace("{prop_vals}", _PROP_VALS)
        .replace("{prop_one}", _PROP_ONE if one else "")
    )  # fmt: skip


def has_properties(msg: NewMessage) -> bool:
    """Whether a message carries a tag, an origin or a route (the statements that write them)."""
    return msg.tag is not None or msg.origin_site is not None or msg.route is not None


@functools.lru_cache(maxsize=1024)
def _enqueue_one_sql(
    queue_table_id: int,
    buffered: bool,
    props: bool = False,
    *,
    given: frozenset[str] = frozenset(),
    by_priority: bool = False,
    commit_time: bool = False,
    counter_row: bool = False,
) -> str:
    """The one-row statement for a queue table's leaf, taking ``given`` of the optional
    parameters (_ONE_OPTIONAL) and the defaults' constants for the others; ``counter_row``:
    this backend's persistent counter row of the queue exists (_STAT_ONE_UPDATE)."""
    parts = {
        name: f"%({name})s::{sql_type}" if name in given else default
        for name, sql_type, default in _ONE_OPTIONAL
    }
    if buffered:
        stat, counted = _STAT_ONE_BUFFERED, "true"
    elif counter_row:
        stat, counted = _STAT_ONE_UPDATE, COUNTED
    else:
        stat, counted = _STAT_ONE_PERSISTENT, "true"
    sql = _ENQUEUE_ONE_TEMPLATE.replace("{stat}", stat).replace("{counted}", counted)
    for name, text in parts.items():
        sql = sql.replace("{" + name + "}", text)
    return _props(
        sql.replace("{sort_pri}", parts["pri"] if by_priority else "0")
        # Commit-time ordering: NULL, set at commit by the aq_message_commit_seq trigger.
        .replace("{cseq}", "NULL::bigint" if commit_time else "0")
        .replace("{channel_prefix}", CHANNEL_PREFIX)
        .replace("{shards}", str(STAT_SHARDS))
        .replace("{mode_cols}", ", delivery_mode, in_buffer" if buffered else "")
        .replace("{mode_vals}", f", '{BUFFERED}', true" if buffered else "")
        .replace("{messages}", message_leaf(queue_table_id, buffered=buffered)),
        props,
        one=True,
    )


@functools.lru_cache(maxsize=1024)
def _enqueue_sql(
    queue_table_id: int,
    buffered: bool,
    props: bool = False,
    *,
    given: frozenset[str] = frozenset(),
    consumers: bool = False,
    by_priority: bool = False,
    commit_time: bool = False,
    counter_row: bool = False,
    huge: bool = False,
) -> str:
    """The set-based statement for a queue table's leaves (the UNLOGGED ones for buffered
    messages), reading ``given`` of the optional properties (_BATCH_OPTIONAL) from the messages'
    records (the default where a record leaves one out) and the defaults' constants for the
    others; ``consumers``: recipients' rows are
    written (multi-consumer queues); ``counter_row``: as in :func:`_enqueue_one_sql`; ``huge``:
    the payloads are read as json (JSONB_BATCH_MAX)."""
    payloads = _PAYLOADS_JSON if huge else _PAYLOADS
    parts = {
        name: f"coalesce(m.{name}, {default})" if name in given else default
        for name, _, default in _BATCH_OPTIONAL
    }
    if given or props:
        columns = [f"{name} {sql_type}" for name, sql_type, _ in _BATCH_OPTIONAL if name in given]
        columns += _PROP_COLUMNS if props else ()
        source = (
            _RECORDS.replace("{types}", ", ".join(columns))
            .replace("{names}", ", ".join(column.split()[0] for column in columns))
            .replace("{payloads}", payloads)
        )
    else:
        source = f"SELECT * FROM {payloads} WITH ORDINALITY AS m(payload, ord)"
    if buffered:
        stat, counted = _STAT_BUFFERED, "true"
    elif counter_row:
        stat, counted = _STAT_UPDATE, COUNTED
    else:
        stat, counted = _STAT_PERSISTENT, "true"
    sql = (
        _ENQUEUE_TEMPLATE.replace("{source}", source)
        .replace("{recipients}", _RECIPIENTS if consumers else "")
        .replace("{payload}", "m.payload::jsonb" if huge else "m.payload")
        .replace("{stat}", stat)
        .replace("{counted}", counted)
    )
    for name, text in parts.items():
        sql = sql.replace("{" + name + "}", text)
    return _props(
        sql.replace("{sort_pri}", parts["pri"] if by_priority else "0")
        # Commit-time ordering: NULL, set at commit by the aq_message_commit_seq trigger.
        .replace("{cseq}", "NULL::bigint" if commit_time else "0")
        .replace("{shards}", str(STAT_SHARDS))
        .replace("{mode}", f"'{BUFFERED}'" if buffered else f"'{PERSISTENT}'")
        .replace("{in_buffer}", "true" if buffered else "false")
        .replace("{messages}", message_leaf(queue_table_id, buffered=buffered))
        .replace("{consumers}", consumer_leaf(queue_table_id, buffered=buffered)),
        props,
    )


def _set_values(msg: NewMessage) -> dict[str, object]:
    """The optional properties (_OPTIONAL's names) ``msg`` sets to other than their defaults, with
    their values as sent (headers as a dict): a one-row statement's parameters and a batch's
    record; the statements take the defaults' constants for the rest."""
    values: dict[str, object] = {}
    if msg.priority != 1:
        values["pri"] = msg.priority
    if msg.delay:
        values["delay"] = float(msg.delay)
    if msg.expiration is not None:
        values["exp"] = msg.expiration
    if msg.correlation:
        values["corr"] = msg.correlation
    if msg.sender:
        values["sender"] = msg.sender
    if msg.headers:
        values["headers"] = msg.headers
    if msg.kind != USER:
        values["kind"] = msg.kind
    if msg.type_name:
        values["tname"] = msg.type_name
    return values


def enqueue(
    conn: psycopg.Connection,
    queue: QueueInfo,
    messages: Sequence[NewMessage],
    *,
    user: str = "",
    validate: bool = True,
    delivery_mode: str = PERSISTENT,
    in_caller_transaction: bool = False,
) -> list[int]:
    """Insert ``messages`` in order in the caller's transaction and return their ids.

    Multi-consumer queues give each message to its recipients (by name) or, without a recipient
    list, to every subscriber present now; a message nobody could dequeue is refused (AQ's
    "no recipients"). Listeners on the queue's channel are woken when the transaction commits.

    ``delivery_mode=BUFFERED`` puts them in the queue's buffer instead, outside the caller's
    transaction (see :mod:`queues.engine.buffered`): committed when this returns, refused with
    ORA-25307 under flow control. ``in_caller_transaction`` keeps a buffered enqueue in the
    caller's transaction: for the engine's own movers (propagation), whose dequeue and enqueue
    must commit together; never for users.
    """
    buf.check_enqueue_mode(delivery_mode)
    if not messages:
        return []
    if delivery_mode == BUFFERED:
        buf.refuse_unsupported(queue, messages)
        target = conn if in_caller_transaction else buf.own_connection(conn)
        # Flow control first, on its own: a refused publisher's state is recorded and kept.
        nbytes = buf.admit(target, queue, messages)
        if queue.multiple_consumers or in_caller_transaction:
            # Recipients and subscriber rules take more statements, undone together if the
            # rules leave a message nobody takes.
            with target.transaction():
                ids = _enqueue(target, queue, messages, user=user, validate=validate, buffered=True)
        else:
            # One INSERT: on the autocommit connection it is its own transaction, without a
            # BEGIN and a COMMIT round trip around it.
            ids = _enqueue(target, queue, messages, user=user, validate=validate, buffered=True)
        buf.admitted(queue, len(messages), nbytes)
        return ids
    return _enqueue(conn, queue, messages, user=user, validate=validate, buffered=False)


def _enqueue(
    conn: psycopg.Connection,
    queue: QueueInfo,
    messages: Sequence[NewMessage],
    *,
    user: str,
    validate: bool,
    buffered: bool,
) -> list[int]:
    if queue.is_exception:
        raise QueueDisabled(
            f"{queue.name} is an exception queue; messages arrive there only from the engine.",
            field="queue",
        )
    if not queue.enqueue_enabled:
        raise QueueDisabled(f"Enqueue is disabled on queue {queue.name}.", field="queue")
    # Each payload's JSON text, as validation made it (None: encode it here).
    texts: list[str | None] = [None] * len(messages)
    if validate:
        many = len(messages) > 1
        texts = [
            validate_message(queue, msg, position=i if many else None)
            for i, msg in enumerate(messages)
        ]

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
        if len(messages) == 1:  # one message: the one-row statement
            return _enqueue_one(conn, queue, messages[0], texts[0], user, buffered=buffered)

    rows = [_set_values(m) for m in messages]
    given = frozenset(name for record in rows for name in record)
    consumers = queue.multiple_consumers
    props = any(map(has_properties, messages))
    payloads = (
        "["
        + ",".join(
            encode_json(m.payload) if t is None else t for m, t in zip(messages, texts, strict=True)
        )
        + "]"
    )
    params: dict[str, object] = {
        "qid": queue.id,
        "payloads": payloads,
        "n": len(messages),
        "user": user,
        "channel": queue.channel,
    }
    if given or props or consumers:
        if consumers:
            for record, n in zip(rows, npend, strict=True):
                record["npend"] = n
            params.update(qt=queue.queue_table_id, r_ord=r_ord, r_sub=r_sub)
        if props:
            for record, m in zip(rows, messages, strict=True):
                record.update(
                    tag=m.tag,
                    origin_site=m.origin_site,
                    route=None if m.route is None else list(m.route),
                )
        params["msgs"] = encode_json(rows)
    counter = counter_key(conn, queue.id)
    counter_row = not buffered and counter in COUNTER_ROWS
    sql = _enqueue_sql(
        queue.queue_table_id,
        buffered,
        props,
        given=given | {"npend"} if consumers else given,
        consumers=consumers,
        by_priority=queue.by_priority,
        commit_time=queue.commit_time,
        counter_row=counter_row,
        huge=len(payloads) > JSONB_BATCH_MAX,
    )
    try:
        row = cursors.execute(conn, sql, params).fetchone()
    except _UNSTORABLE as exc:
        raise _unstorable(exc, "messages") from exc
    ids = row[0] or []
    if len(ids) != len(messages):
        # The queue was stopped or dropped between reading it and inserting.
        fresh = queue_info(conn, queue.id)
        raise QueueDisabled(f"Enqueue is disabled on queue {fresh.name}.", field="queue")
    if not buffered:
        if not row[2]:
            count_missed(conn, queue, "enqueued", len(ids))
        COUNTER_ROWS.add(counter)
    stamp_groups(conn, queue, ids)  # TRANSACTIONAL queue tables: this transaction's group
    if queue.multiple_consumers:
        ruled = [mid for mid, msg in zip(ids, messages, strict=True) if not msg.recipients]
        _apply_subscriber_rules(conn, queue, ids, ruled, buffered=buffered)
    return ids


def _enqueue_one(
    conn: psycopg.Connection,
    queue: QueueInfo,
    msg: NewMessage,
    text: str | None,
    user: str,
    *,
    buffered: bool,
) -> list[int]:
    """:func:`enqueue` of one validated message on a single-consumer queue (``text``: its
    payload's JSON text, if validation made it)."""
    # Only what differs from the defaults is sent (see _ENQUEUE_ONE_TEMPLATE).
    params = _set_values(msg)
    if "headers" in params:
        params["headers"] = encode_json(params["headers"])
    if user:
        params["user"] = user
    given = frozenset(params)
    params["qid"] = queue.id
    params["payload"] = encode_json(msg.payload) if text is None else text
    props = has_properties(msg)
    if props:
        params.update(
            tag=msg.tag,
            origin=msg.origin_site,
            route=None if msg.route is None else list(msg.route),
        )
    counter = counter_key(conn, queue.id)
    counter_row = not buffered and counter in COUNTER_ROWS
    sql = _enqueue_one_sql(
        queue.queue_table_id,
        buffered,
        props,
        given=given,
        by_priority=queue.by_priority,
        commit_time=queue.commit_time,
        counter_row=counter_row,
    )
    try:
        row = cursors.execute(conn, sql, params).fetchone()
    except _UNSTORABLE as exc:
        raise _unstorable(exc, "payload") from exc
    if row is None:
        # The queue was stopped or dropped between reading it and inserting.
        fresh = queue_info(conn, queue.id)
        raise QueueDisabled(f"Enqueue is disabled on queue {fresh.name}.", field="queue")
    if not buffered:
        if not row[2]:
            count_missed(conn, queue, "enqueued", 1)
        COUNTER_ROWS.add(counter)
    ids = [row[0]]
    stamp_groups(conn, queue, ids)  # TRANSACTIONAL queue tables: this transaction's group
    return ids


# A value the statement cannot store (raw JSON text that is no JSON or not one value, a priority
# of 2.5 or None in a batch's records, records that ROWS FROM padded with NULLs) is the caller's
# bad input. Caught around the statement (a try costs nothing until it catches).
_UNSTORABLE = (psycopg.errors.DataError, psycopg.errors.NotNullViolation)


def _unstorable(exc: psycopg.Error, field: str) -> InvalidMessage:
    return InvalidMessage(f"Not stored: {exc.diag.message_primary or exc}.", field=field)


def _apply_subscriber_rules(
    conn: psycopg.Connection,
    queue: QueueInfo,
    ids: list[int],
    ruled: list[int],
    *,
    buffered: bool = False,
) -> None:
    """Subscribers with a rule keep only the messages their rule is TRUE for, decided in SQL at
    enqueue (AQ decides a message's recipients when it is enqueued; an explicit recipient list
    overrides the rules). A message left with no recipient is refused, as with no subscriber."""
    rules = subscriber_rules(conn, queue)
    if not rules or not ruled:
        return
    counts = [
        (mid, n)
        for mid, _, n in apply_subscriber_rules(
            conn, queue, rules, "m.id = ANY(%(ids)s)", {"ids": ruled}, buffered=buffered
        )
    ]
    empty = sorted(mid for mid, n in counts if n == 0)
    if empty:
        pos = ids.index(empty[0])
        where = "" if len(ids) == 1 else f" (messages[{pos}])"
        raise NoSubscribers(
            f"No subscriber of queue {queue.name} takes this message{where}: every subscriber's "
            "rule is FALSE or NULL for it.",
            field="queue" if len(ids) == 1 else f"messages[{pos}]",
        )
