"""The queue engine: AQ semantics over PostgreSQL, on a plain psycopg 3 connection.

One module per concern; this package re-exports their public names, so callers use
``from queues import engine`` and ``engine.enqueue(...)``. Nothing outside this package (and the
migrations) writes the message tables; a test checks it.

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

from queues.engine import buffered  # noqa: F401
from queues.engine.buffered import (  # noqa: F401
    BufferedNotSupported,
    FlowControl,
    PoolTooSmall,
)
from queues.engine.dequeue import (  # noqa: F401
    dequeue,
    pending_for_any,
)
from queues.engine.enqueue import (  # noqa: F401
    enqueue,
)
from queues.engine.failures import (  # noqa: F401
    consumer_exception_copies,
    fail_attempts,
    fail_consumer_attempts,
    move_to_exception_queue,
)
from queues.engine.grouping import (  # noqa: F401
    annotate as group_annotate,
)
from queues.engine.leases import (  # noqa: F401
    ack,
    release,
)
from queues.engine.listen import (  # noqa: F401
    Listener,
    _local,
    thread_listener,
)
from queues.engine.monitor import (  # noqa: F401
    MonitorReport,
    monitor_run,
)
from queues.engine.origin import (  # noqa: F401
    arrived,
    visited,
)
from queues.engine.purge import (  # noqa: F401
    PurgeCondition,
    purge,
)
from queues.engine.receive import (  # noqa: F401
    Arrival,
    forget_receipts,
    receipts,
    receive,
    receive_fanout,
    still_pending,
    still_pending_any,
)
from queues.engine.replay import (  # noqa: F401
    replay,
)
from queues.engine.rows import (  # noqa: F401
    _candidate_filter,
)
from queues.engine.sets import (  # noqa: F401
    COPY_COLUMNS,
    FREE_COPY,
    apply_subscriber_rules,
    consume_sql,
    count_down_sql,
    exception_copies,
    insert_copies_sql,
    number_commit_time,
    remove_sql,
    remove_subscriber_copies,
    stat_sql,
    take_copies_sql,
    withdraw,
)
from queues.engine.storage import (  # noqa: F401
    Bloat,
    bloated,
    consumer_leaf,
    consumer_part,
    create_storage,
    drop_orphan_storage,
    drop_storage,
    hold_storage,
    leaves,
    lock_storage,
    message_leaf,
    message_part,
    truncate_storage,
    vacuum,
)
from queues.engine.topology import (  # noqa: F401
    QUEUE_RULE_VARIABLES,
    queue_info,
    rule_sql,
    subscriber_id,
    subscriber_ids,
    subscriber_rules,
)
from queues.engine.transfer import (  # noqa: F401
    TransferResult,
    transfer,
)
from queues.engine.types import (  # noqa: F401
    BROWSE,
    BUFFERED,
    DDL_LCR,
    DEFAULT_LEASE_S,
    EXCEPTION_QUEUE,
    EXPIRED,
    FIRST_MESSAGE,
    LOCKED,
    NEXT_MESSAGE,
    NEXT_TRANSACTION,
    NORMAL_QUEUE,
    PERSISTENT,
    PERSISTENT_OR_BUFFERED,
    PROCESSED,
    READY,
    REASON_EXPIRED,
    REASON_MAX_RETRIES,
    REMOVE,
    ROW_LCR,
    STAT_SHARDS,
    TRANSACTIONAL,
    USER,
    WAITING,
    DequeuedMessage,
    EndOfGroup,
    InvalidMessage,
    LeaseMismatch,
    NewMessage,
    NoSubscribers,
    Position,
    QueueDisabled,
    QueueInfo,
    QueueNotFound,
    channel_name,
)
from queues.engine.validation import (  # noqa: F401
    _DDL_LCR_SCHEMA,
    _ROW_LCR_SCHEMA,
    schema_check,
    tag_problem,
    validate_message,
)
