"""Buffered messages (DBMS_AQ ``delivery_mode`` BUFFERED): the buffer, its memory pool, publisher
flow control and spilling.

Where they live. A buffered message is a row of ``aq_message`` with ``delivery_mode =
'BUFFERED'`` and ``in_buffer = true``; with the storage per queue table, rows with ``in_buffer``
true sit in the queue table's UNLOGGED leaf, so they cost no WAL and a crash (crash recovery resets
unlogged relations) loses them, as an instance failure loses AQ's buffered queue. The queue monitor
spills old ones, or those beyond the queue's share of the pool, to logged storage (``in_buffer =
false``, still BUFFERED): spilled messages survive a crash, like AQ's ``AQ$_<qt>_P``.

Not transactional. AQ accepts buffered enqueue and dequeue only with IMMEDIATE visibility
(ORA-25298): they are never part of the caller's transaction. The engine runs them on a connection
of its own to the same database (one per thread and server, autocommit, each call one short
transaction with ``synchronous_commit = off``, since nothing it writes is meant to be durable).
So a buffered message is visible to every session as soon as ``enqueue`` returns, the caller's
rollback does not take it back, and a buffered REMOVE is final at once.

The pool. ``POOL`` holds the Streams-pool settings in Oracle's four sizing modes (§1.4), set from
Django settings by ``queues.apps``; the engine itself imports no Django. A queue becomes a
*buffered queue* at its first buffered enqueue (AQ creates the buffered queue lazily, too), and
the pool is then divided equally between the buffered queues. Under manual sizing every buffered
queue needs 10 MB of pool: a first buffered enqueue that would break that rule is refused
(the ORA-00832 analogue) and the system check ``queues.E101`` reports it.

Flow control. A buffered enqueue is refused with ORA-25307 when the queue's unconsumed messages
still in the buffer take more than its share of the pool, or (when ``flow_control_msgs`` is set)
outnumber that threshold: AQ's publisher flow control when subscribers fall behind. The usage is
read from the buffer at most every ``recheck_s`` seconds per process and queue, and this process's
enqueues since then are added, so one publisher is held exactly and several within that interval.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg
from psycopg.conninfo import make_conninfo

from core.exceptions import Conflict, DomainError
from core.storable import encode_json
from queues.engine.storage import message_leaf
from queues.engine.types import (
    BUFFERED,
    PERSISTENT,
    PERSISTENT_OR_BUFFERED,
    STAT_SHARDS,
    TRANSACTIONAL,
    NewMessage,
    QueueInfo,
)

MB = 1024 * 1024
# Oracle: "increase the size of the Oracle Streams pool by 10 MB for each buffered queue".
PER_QUEUE_BYTES = 10 * MB

ENQUEUE_MODES = (PERSISTENT, BUFFERED)
DEQUEUE_MODES = (PERSISTENT, BUFFERED, PERSISTENT_OR_BUFFERED)

PUBLISHING = "PUBLISHING MESSAGES"
FLOW_UNBROWSED = "IN FLOW CONTROL: TOO MANY UNBROWSED MESSAGES"
FLOW_MEMORY = "IN FLOW CONTROL: INSUFFICIENT MEMORY AND UNBROWSED MESSAGES"


class BufferedNotSupported(DomainError):
    code = "buffered_not_supported"


class FlowControl(Conflict):
    """ORA-25307: the queue's subscribers do not keep up with its buffered publishers."""

    code = "flow_control"


class PoolTooSmall(Conflict):
    """The ORA-00832 analogue: the pool cannot give a new buffered queue its memory."""

    code = "streams_pool_too_small"


@dataclass
class PoolConfig:
    """Oracle's four sizing parameters (bytes, 0 = not set) and the buffer's thresholds."""

    memory_target: int = 0
    memory_max_target: int = 0
    sga_target: int = 0
    streams_pool_size: int = 0
    # Oracle's default mode takes 10% of the shared pool; 80 MB gives the 8 MB of §1.4's example.
    shared_pool_size: int = 80 * MB
    # Spill a buffered message left this long in the buffer. The seeds give no figure; 300 s is
    # what Oracle's hidden _buffered_message_spill_age is reported to default to.
    spill_after_s: float = 300.0
    # Refuse buffered enqueues when this many unconsumed messages are in a queue's buffer; 0 = only
    # the memory share limits a publisher.
    flow_control_msgs: int = 0
    recheck_s: float = 0.5

    @property
    def mode(self) -> str:
        if self.memory_target or self.memory_max_target:
            return "AUTOMATIC MEMORY MANAGEMENT"
        if self.sga_target:
            return "AUTOMATIC SHARED MEMORY MANAGEMENT"
        if self.streams_pool_size:
            return "MANUAL"
        return "DEFAULT"

    @property
    def size(self) -> int:
        """The pool in bytes. Under the automatic modes the pool may grow into the whole target
        less the shared pool (its minimum is STREAMS_POOL_SIZE when set), as Oracle's memory
        manager would move memory to it; manual is STREAMS_POOL_SIZE; default 10% of the shared
        pool."""
        mode = self.mode
        if mode == "AUTOMATIC MEMORY MANAGEMENT":
            target = max(self.memory_target, self.memory_max_target)
            return max(self.streams_pool_size, target - self.shared_pool_size)
        if mode == "AUTOMATIC SHARED MEMORY MANAGEMENT":
            return max(self.streams_pool_size, self.sga_target - self.shared_pool_size)
        if mode == "MANUAL":
            return self.streams_pool_size
        return self.shared_pool_size // 10

    def required(self, buffered_queues: int) -> int:
        """What the 10 MB rule asks of a pool that is not managed automatically."""
        return PER_QUEUE_BYTES * buffered_queues if self.mode == "MANUAL" else 0

    def share(self, buffered_queues: int) -> int:
        return self.size // max(1, buffered_queues)


POOL = PoolConfig()


def configure(**values: float) -> PoolConfig:
    """Replace the pool settings (``queues.apps`` calls it with Django's settings)."""
    global POOL
    POOL = PoolConfig(**values)  # type: ignore[arg-type]
    _usage.clear()
    return POOL


# --- the engine's own connection -----------------------------------------------------------------

_tls = threading.local()


class _OwnConnections(dict[tuple[str, str | None], psycopg.Connection]):
    """A thread's own connections, closed when the thread ends (its thread-local data goes):
    the engine's kept cursor (queues/engine/cursors.py) ties a connection in a reference cycle,
    which only the garbage collector would free, leaving the server session open meanwhile."""

    def __del__(self) -> None:
        for own in self.values():
            with contextlib.suppress(Exception):  # a finaliser must not raise (interpreter exit)
                own.close()


def own_connection(conn: psycopg.Connection) -> psycopg.Connection:
    """This thread's autocommit connection to the server and database of ``conn`` (same user and
    password), opened on first use and again if it broke."""
    # The last caller's connection answers at once: reading conn.info.dsn costs about a fifth
    # of a single buffered enqueue.
    last = _tls.__dict__.get("last")
    if last is not None and last[0]() is conn and not (last[1].closed or last[1].broken):
        return last[1]
    info = conn.info
    key = (info.dsn, info.password)
    conns: _OwnConnections = _tls.__dict__.setdefault("conns", _OwnConnections())
    own = conns.get(key)
    if own is None or own.closed or own.broken:
        dsn = make_conninfo(info.dsn, password=info.password) if info.password else info.dsn
        own = psycopg.connect(dsn, autocommit=True)
        own.execute("SET synchronous_commit = off")
        conns[key] = own
    _tls.last = (weakref.ref(conn), own)
    return own


def close_connections() -> None:
    """Close this thread's own connections (tests, before the test database is dropped)."""
    _tls.__dict__.pop("last", None)
    for own in _tls.__dict__.pop("conns", {}).values():
        own.close()


# --- refusals ------------------------------------------------------------------------------------


def check_enqueue_mode(delivery_mode: str) -> None:
    if delivery_mode not in ENQUEUE_MODES:
        raise DomainError(
            f"Unknown delivery mode {delivery_mode!r} for an enqueue: PERSISTENT or BUFFERED.",
            field="delivery_mode",
        )


def check_dequeue_mode(delivery_mode: str, mode: str) -> None:
    if delivery_mode not in DEQUEUE_MODES:
        raise DomainError(
            f"Unknown delivery mode {delivery_mode!r} for a dequeue: PERSISTENT, BUFFERED or "
            "PERSISTENT_OR_BUFFERED.",
            field="delivery_mode",
        )
    if mode == "LOCKED" and delivery_mode != PERSISTENT:
        # A LOCKED dequeue holds its lock for a transaction; buffered dequeues are IMMEDIATE.
        raise BufferedNotSupported(
            "Buffered messages cannot be dequeued in LOCKED mode: a buffered dequeue is never "
            "part of a transaction (AQ accepts only IMMEDIATE visibility for it). Use REMOVE or "
            "BROWSE, or dequeue PERSISTENT messages.",
            field="delivery_mode",
        )


def refuse_unsupported(queue: QueueInfo, messages: Sequence[NewMessage]) -> None:
    """What AQ does not accept as a buffered message, each named by its field."""
    if queue.is_exception:
        raise BufferedNotSupported(
            f"{queue.name} is an exception queue: exception (error) queues are always persistent, "
            "so buffered messages cannot be enqueued there.",
            field="delivery_mode",
        )
    if queue.message_grouping == TRANSACTIONAL:
        raise BufferedNotSupported(
            f"Queue {queue.name} is in a queue table with transactional message grouping; AQ "
            "supports no buffered messages in transaction-grouping queues.",
            field="delivery_mode",
        )
    many = len(messages) > 1
    for i, msg in enumerate(messages):
        if msg.delay:
            where = f"messages[{i}]." if many else ""
            raise BufferedNotSupported(
                "A buffered message cannot have a delay (AQ refuses delay on buffered "
                "enqueues): enqueue it PERSISTENT or without a delay.",
                field=f"{where}delay",
            )


# --- pool initialisation and flow control --------------------------------------------------------


@dataclass
class _Usage:
    checked_at: float = 0.0
    bytes: int = 0
    msgs: int = 0
    queues: int = 1
    known: bool = False  # the queue is a buffered queue already
    added: list[int] = field(default_factory=lambda: [0, 0])  # this process since the check


_usage: dict[int, _Usage] = {}
_usage_lock = threading.Lock()

_USAGE_SQL = """
SELECT coalesce(sum(octet_length(m.payload::text)), 0)::bigint, count(*),
       (SELECT count(DISTINCT queue_id) FROM aq_buffer_stat),
       EXISTS (SELECT 1 FROM aq_buffer_stat WHERE queue_id = %(qid)s)
FROM {buffer} m
WHERE m.queue_id = %(qid)s AND m.state IN ('READY', 'WAITING')
"""


def message_bytes(messages: Sequence[NewMessage]) -> int:
    """The payload bytes the buffer counts (the length of the payload's JSON text). A payload
    that is no JSON counts nothing: validation, next, refuses it naming its field."""
    total = 0
    for m in messages:
        try:
            total += len(encode_json(m.payload).encode())
        except (TypeError, ValueError, RecursionError):
            continue
    return total


def admit(conn: psycopg.Connection, queue: QueueInfo, messages: Sequence[NewMessage]) -> int:
    """Pool initialisation for a new buffered queue, then publisher flow control. Returns the
    messages' payload bytes, for :func:`admitted`."""
    now = time.monotonic()
    with _usage_lock:
        u = _usage.setdefault(queue.id, _Usage())
        stale = now - u.checked_at >= POOL.recheck_s or not u.known
    if stale:
        sql = _USAGE_SQL.replace("{buffer}", message_leaf(queue.queue_table_id, buffered=True))
        nbytes, nmsgs, nqueues, known = conn.execute(
            sql, {"qid": queue.id}, prepare=True
        ).fetchone()
        with _usage_lock:
            u.checked_at, u.bytes, u.msgs, u.added = now, int(nbytes), int(nmsgs), [0, 0]
            u.queues = int(nqueues) + (0 if known else 1)
            u.known = bool(known)
    if not u.known:
        need = POOL.required(u.queues)
        if need and POOL.size < need:
            raise PoolTooSmall(
                f"ORA-00832: the Streams pool ({POOL.size // MB} MB, set manually by "
                f"AQ_STREAMS_POOL_SIZE) cannot make {queue.name} a buffered queue: {u.queues} "
                f"buffered queues need {need // MB} MB (10 MB each). Raise AQ_STREAMS_POOL_SIZE "
                "or let the pool be sized automatically.",
                field="delivery_mode",
            )
    used_bytes = u.bytes + u.added[0]
    used_msgs = u.msgs + u.added[1]
    share = POOL.share(u.queues)
    state = ""
    nbytes = message_bytes(messages)
    if used_bytes + nbytes > share and used_msgs > 0:
        state = FLOW_MEMORY
    elif POOL.flow_control_msgs and used_msgs + len(messages) > POOL.flow_control_msgs:
        state = FLOW_UNBROWSED
    if state:
        _record_state(conn, queue, messages, state)
        raise FlowControl(
            f"ORA-25307: Enqueue rate too high, flow control enabled. Queue {queue.name}'s "
            f"subscribers are behind: {used_msgs} unconsumed buffered messages use "
            f"{used_bytes} bytes of its {share}-byte share of the Streams pool"
            + (f" (limit {POOL.flow_control_msgs} messages)" if state == FLOW_UNBROWSED else "")
            + ". Try the enqueue again later.",
            field="delivery_mode",
        )
    return nbytes


def admitted(queue: QueueInfo, count: int, nbytes: int) -> None:
    """Count an enqueue of ``count`` messages of ``nbytes`` payload bytes that went in, until the
    next look at the buffer."""
    with _usage_lock:
        u = _usage.setdefault(queue.id, _Usage())
        u.known = True
        u.added[0] += nbytes
        u.added[1] += count


def _record_state(
    conn: psycopg.Connection, queue: QueueInfo, messages: Sequence[NewMessage], state: str
) -> None:
    """V$BUFFERED_PUBLISHERS.PUBLISHER_STATE of the refused publishers."""
    senders = sorted({m.sender or "" for m in messages})
    conn.execute(
        f"""
        INSERT INTO aq_buffer_stat AS s (queue_id, sender, shard, state, state_at)
        SELECT %s, x, pg_backend_pid() %% {STAT_SHARDS}, %s, now() FROM unnest(%s::text[]) AS x
        ON CONFLICT (queue_id, sender, shard)
        DO UPDATE SET state = EXCLUDED.state, state_at = EXCLUDED.state_at
        """,
        (queue.id, state, senders),
    )


# --- spilling (the queue monitor) ----------------------------------------------------------------

# Spilling moves a message from the UNLOGGED leaf to the logged one, and an UPDATE of a leaf cannot
# move a row: each message and its consumer copies are deleted from the buffer leaves and inserted
# into the logged ones with the same ids and every field, in one statement (through the parents,
# which route by queue table and in_buffer). Not an UPDATE of in_buffer through the parent either:
# a row moved that way makes a concurrent locker fail ("tuple to be locked was already moved to
# another partition"), where a deleted row is simply skipped by a SKIP LOCKED dequeue.
#
# The statement never waits: the messages are locked with SKIP LOCKED, and so are their copies; a
# message with a copy that a dequeuer holds stays in the buffer until the next pass (moving it
# would leave that copy behind, and waiting for it while holding the message would deadlock with
# the dequeuer's count-down).
_MOVE_SQL = """
WITH {candidates},
m0 AS (
    SELECT m.id FROM aq_message m JOIN cand ON cand.id = m.id
    WHERE m.in_buffer AND m.state IN ('READY', 'WAITING')
    ORDER BY m.id LIMIT %(n)s FOR UPDATE OF m SKIP LOCKED
),
c0 AS (
    SELECT mc.id, mc.message_id FROM aq_message_consumer mc JOIN m0 ON m0.id = mc.message_id
    WHERE mc.in_buffer FOR UPDATE OF mc SKIP LOCKED
),
c AS (
    SELECT m0.id FROM m0
    WHERE (SELECT count(*) FROM c0 WHERE c0.message_id = m0.id)
        = (SELECT count(*) FROM aq_message_consumer mc WHERE mc.in_buffer
           AND mc.message_id = m0.id)
),
gone AS (
    DELETE FROM aq_message m USING c WHERE m.in_buffer AND m.id = c.id RETURNING m.*
),
moved AS (
    INSERT INTO aq_message ({m_cols}) SELECT {m_vals} FROM gone AS m RETURNING queue_id
),
cgone AS (
    DELETE FROM aq_message_consumer mc USING c0 JOIN c ON c.id = c0.message_id
    WHERE mc.in_buffer AND mc.id = c0.id RETURNING mc.*
),
cmoved AS (
    INSERT INTO aq_message_consumer ({c_cols}) SELECT {c_vals} FROM cgone AS mc
){stat}
SELECT count(*) FROM moved
"""

_SPILL_CANDIDATES = """b AS (
    SELECT m.id, m.queue_id, m.enq_time,
           sum(octet_length(m.payload::text)) OVER (PARTITION BY m.queue_id
                                                    ORDER BY m.id DESC) AS newer_bytes
    FROM aq_message m
    WHERE m.in_buffer AND m.state IN ('READY', 'WAITING'){only}
),
cand AS (
    SELECT b.id FROM b
    WHERE b.enq_time <= now() - make_interval(secs => %(age)s) OR b.newer_bytes > %(share)s
)"""

_SPILL_STAT = """,
st AS (
    INSERT INTO aq_buffer_stat AS st (queue_id, sender, shard, spilled)
    SELECT moved.queue_id, '', pg_backend_pid() %% {shards}, count(*) FROM moved
    GROUP BY moved.queue_id
    ON CONFLICT (queue_id, sender, shard) DO UPDATE SET spilled = st.spilled + EXCLUDED.spilled
)""".replace("{shards}", str(STAT_SHARDS))

_COLUMNS_SQL = """
SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped
"""


def _move_sql(conn: psycopg.Connection, candidates: str, *, count_spills: bool) -> str:
    """The move statement over the tables' current columns (read from the catalogue, so a column
    added by a later migration moves too)."""
    cols = {}
    for table, alias in (("aq_message", "m"), ("aq_message_consumer", "mc")):
        (names,) = conn.execute(_COLUMNS_SQL, (table,)).fetchone()
        vals = ", ".join("false" if c == "in_buffer" else f"{alias}.{c}" for c in names.split(", "))
        cols[alias] = (names, vals)
    return (
        _MOVE_SQL.replace("{candidates}", candidates)
        .replace("{m_cols}", cols["m"][0])
        .replace("{m_vals}", cols["m"][1])
        .replace("{c_cols}", cols["mc"][0])
        .replace("{c_vals}", cols["mc"][1])
        .replace("{stat}", _SPILL_STAT if count_spills else "")
    )


def spill(
    conn: psycopg.Connection, *, limit: int = 10_000, tables: Sequence[int] | None = None
) -> int:
    """Move buffered messages of ``tables`` (queue table ids; None: all) to logged storage:
    those older than ``POOL.spill_after_s`` and, per queue, the oldest beyond the queue's share
    of the pool (they stay BUFFERED, now SPILLED). Returns how many were spilled."""
    nqueues = conn.execute("SELECT count(DISTINCT queue_id) FROM aq_buffer_stat").fetchone()[0]
    only = "" if tables is None else " AND m.queue_table_id = ANY(%(tables)s)"
    (spilled,) = conn.execute(
        _move_sql(conn, _SPILL_CANDIDATES.replace("{only}", only), count_spills=True),
        {
            "age": POOL.spill_after_s,
            "share": POOL.share(int(nqueues)),
            "n": limit,
            "tables": list(tables) if tables is not None else None,
        },
    ).fetchone()
    if spilled:
        with _usage_lock:
            _usage.clear()  # the buffer shrank: look again before the next flow-control decision
    return int(spilled)


def out_of_buffer(conn: psycopg.Connection, ids: Sequence[int]) -> list[int]:
    """Those of ``ids`` that are (now) on logged storage: the ones still in the buffer are moved
    there first, as :func:`spill` does (not counted as spilled). A message whose consumer copy a
    dequeuer holds stays in the buffer and is left out; the next monitor pass takes it."""
    if not ids:
        return []
    ids = list(ids)
    if conn.execute(
        "SELECT EXISTS (SELECT 1 FROM aq_message WHERE in_buffer AND id = ANY(%s))", (ids,)
    ).fetchone()[0]:
        conn.execute(
            _move_sql(conn, "cand AS (SELECT unnest(%(ids)s::bigint[]) AS id)", count_spills=False),
            {"ids": ids, "n": len(ids)},
        )
    stay = {
        r[0]
        for r in conn.execute(
            "SELECT id FROM aq_message WHERE in_buffer AND id = ANY(%s)", (ids,)
        ).fetchall()
    }
    return [i for i in ids if i not in stay]


def count_expired(conn: psycopg.Connection, ids: Sequence[int]) -> None:
    """V$BUFFERED_QUEUES.EXPIRED_MSGS: count the buffered ones among messages about to expire."""
    if not ids:
        return
    conn.execute(
        f"""
        INSERT INTO aq_buffer_stat AS st (queue_id, sender, shard, expired)
        SELECT queue_id, '', pg_backend_pid() %% {STAT_SHARDS}, count(*) FROM aq_message
        WHERE id = ANY(%s) AND delivery_mode = 'BUFFERED' GROUP BY queue_id
        ON CONFLICT (queue_id, sender, shard) DO UPDATE SET expired = st.expired + EXCLUDED.expired
        """,
        (list(ids),),
    )


def subscriber_dequeue_stat_sql(sub_param: str, src: str) -> str:
    """INSERT … ON CONFLICT adding the messages of ``src`` (column ``id``) to subscriber
    ``%(sub_param)s``'s buffered dequeue counters (V$BUFFERED_SUBSCRIBERS), in this backend's
    shard (a CTE body or a statement)."""
    return (
        "INSERT INTO aq_buffer_sub_stat AS s (subscriber_id, shard, dequeued, last_msgid, "
        f"last_deq) SELECT %({sub_param})s, pg_backend_pid() %% {STAT_SHARDS}, count(*), "
        f"max(x.id), now() FROM {src} x HAVING count(*) > 0 "
        "ON CONFLICT (subscriber_id, shard) DO UPDATE SET dequeued = s.dequeued + "
        "EXCLUDED.dequeued, last_msgid = EXCLUDED.last_msgid, last_deq = EXCLUDED.last_deq"
    )


def count_subscriber_dequeues(conn: psycopg.Connection, sub_id: int, n: int, last_id: int) -> None:
    """V$BUFFERED_SUBSCRIBERS' per-subscriber dequeue counters: ``n`` messages, the last
    ``last_id``."""
    conn.execute(
        # n rows whose greatest id is last_id: what the set-based counter takes.
        subscriber_dequeue_stat_sql(
            "sub", "(SELECT %(last)s::bigint AS id FROM generate_series(1, %(n)s))"
        ),
        {"sub": sub_id, "n": n, "last": last_id},
        prepare=True,
    )
