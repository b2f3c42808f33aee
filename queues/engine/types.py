"""Constants, errors and the value types the engine takes and returns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any
from uuid import UUID

from core.exceptions import Conflict, DomainError, NotFound
from queues.engine.storage import consumer_leaf, message_leaf

READY, WAITING, PROCESSED, EXPIRED = "READY", "WAITING", "PROCESSED", "EXPIRED"
NORMAL_QUEUE, EXCEPTION_QUEUE = "NORMAL_QUEUE", "EXCEPTION_QUEUE"
REMOVE, LOCKED, BROWSE = "REMOVE", "LOCKED", "BROWSE"
FIRST_MESSAGE, NEXT_MESSAGE = "FIRST_MESSAGE", "NEXT_MESSAGE"
# Only on TRANSACTIONAL queue tables: skip the rest of the current group (DBMS_AQ.NEXT_TRANSACTION).
NEXT_TRANSACTION = "NEXT_TRANSACTION"
USER, ROW_LCR, DDL_LCR = "USER", "ROW_LCR", "DDL_LCR"
PERSISTENT, BUFFERED = "PERSISTENT", "BUFFERED"
# Dequeue only (DBMS_AQ.PERSISTENT_OR_BUFFERED): either kind, in the queue's order.
PERSISTENT_OR_BUFFERED = "PERSISTENT_OR_BUFFERED"
TRANSACTIONAL = "TRANSACTIONAL"
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


class EndOfGroup(Conflict):
    """ORA-25235: every message of the current transaction group was fetched; continue with
    NEXT_TRANSACTION (or FIRST_MESSAGE)."""

    code = "end_of_group"


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
    message_grouping: str = "NONE"

    @property
    def grouped(self) -> bool:
        """A TRANSACTIONAL queue table: one enqueuing transaction's messages are one group."""
        return self.message_grouping == TRANSACTIONAL and not self.is_exception

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

    @property
    def messages(self) -> str:
        """The queue table's logged message leaf: per-queue statements name it, not the parent
        (through the parent a prepared statement plans over every queue table's partitions)."""
        return message_leaf(self.queue_table_id)

    @property
    def consumers(self) -> str:
        return consumer_leaf(self.queue_table_id)


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
    # Directed networks (docs/SITES.md): Oracle's Streams tag as hexadecimal text (RAW), and
    # where the message comes from. None everywhere for a message enqueued here: only then
    # does the enqueue take its plain statement. Origin and route are the engine's to set
    # (engine.receive); a user gives at most a tag.
    tag: str | None = None
    origin_site: str | None = None
    route: Sequence[str] | None = None


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
    """A message as a dequeue or browse returns it. The payload arrives as its JSON text and is
    parsed on first use of :attr:`payload`: a mover that passes it on, or a consumer that looks
    at the headers and the ids, never pays for parsing it (half of building a batch of 100)."""

    id: int
    queue_id: int
    state: str
    priority: int
    kind: str
    type_name: str
    correlation: str
    sender: str
    headers: dict[str, Any]
    payload_json: str
    enq_time: datetime
    attempts: int
    position: Position
    lock_token: UUID | None = None
    original_queue_id: int | None = None
    exception_reason: str = ""
    delivery_mode: str = PERSISTENT
    # A buffered message still in the buffer (AQ's IN-MEMORY); False once spilled to logged storage.
    in_buffer: bool = False
    # TRANSACTIONAL queue tables only (queues/engine/grouping.py): AQ's ``transaction_group``, the
    # message's 1-based place in it and how many messages it has (as this consumer gets them),
    # whether it ends the group, and the token that owns the group.
    transaction_group: int | None = None
    group_position: int | None = None
    group_size: int | None = None
    last_in_group: bool = False
    group_token: UUID | None = None
    # Directed networks: the tag as upper-case hex, the origin site (None: this site) and the
    # sites it left on its way here, in order (None: it never left one).
    tag: str | None = None
    origin_site: str | None = None
    route: list[str] | None = None

    @cached_property
    def payload(self) -> Any:
        return json.loads(self.payload_json)

    @classmethod
    def from_columns(cls, **values: Any) -> DequeuedMessage:
        """A message from the values the engine read from its own rows, without ``__init__``: a
        frozen dataclass sets each field through ``object.__setattr__``, which cost four times
        this (8-11 µs a message, a sixth of a batch of 100's time). Fields left out keep their
        class default; none of this class's fields has a default factory (a test checks)."""
        return cls.from_values(values)

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> DequeuedMessage:
        """:meth:`from_columns` of a dict the caller made (no copy of it as keyword arguments)."""
        message = object.__new__(cls)
        message.__dict__.update(values)
        return message

    @property
    def buffered_state(self) -> str:
        """AQ$<queue_table>'s MSG_STATE words for a buffered message; empty for persistent."""
        if self.delivery_mode != BUFFERED:
            return ""
        return "IN MEMORY" if self.in_buffer else "SPILLED"

    @property
    def payload_pretty(self) -> str:
        return json.dumps(self.payload, indent=2, sort_keys=True, ensure_ascii=False)


CHANNEL_PREFIX = "aq_q"  # a queue's LISTEN/NOTIFY channel: the prefix and its id


def channel_name(queue_id: int) -> str:
    return f"{CHANNEL_PREFIX}{queue_id}"
