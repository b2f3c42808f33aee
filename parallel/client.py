"""A small Python client of a logical queue, for code running in this project's processes (a
Celery task, a script under ``manage.py shell``); HTTP clients use /api/logical-queues/ the same
way. One object is one session of the white paper: it registers a client session (counted in
the balance view), picks a partition once and keeps it.

    orders = LogicalQueueClient("ORDERS")                  # server mode: AQ_INSTANCE_NAME
    orders = LogicalQueueClient("ORDERS", instance="n2")   # fixed-client mode
    orders.enqueue({"id": 1})
    orders.enqueue({"part": 1}, key="order-42")            # ordered group: one partition
    orders.dequeue()                                       # [DequeuedMessage]

Failover: when the kept partition moved to another instance, the service refuses the session's
next call with :class:`~parallel.services.PartitionMoved` (partition, from, to). In server mode
the client re-picks a partition of its instance at once and goes on (the move is in
``moves``); when its instance serves none, or in fixed-client mode, the notice is raised: the
caller moves (``client.instance = exc.to_instance``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from core.exceptions import DomainError
from parallel import services
from parallel.services import PartitionMoved
from queues import engine
from queues.services import DequeueRequest

T = TypeVar("T")

__all__ = ["LogicalQueueClient", "PartitionMoved"]


class LogicalQueueClient:
    def __init__(self, logical_queue: str, *, user: Any = None, instance: str | None = None):
        self.logical_queue = services.logical_queue_resolve(logical_queue)
        self.user = user
        self.instance = instance  # None: server mode (this process's AQ_INSTANCE_NAME)
        self.partition: str | None = None  # the session's partition, once chosen
        self.session = uuid.uuid4()  # registered by the first call
        self.moves: list[PartitionMoved] = []  # the failover notices this session was given

    def _keep(self, placed: services.Placed, key: str | None) -> None:
        if key is None:  # a group's partition is the key's, not the session's
            self.partition = placed.partition.queue.name

    def _call(self, op: Callable[[str | None], T]) -> T:
        """``op(partition)``, once more after a failover notice in server mode (the service has
        already made the session forget the moved partition)."""
        try:
            return op(self.partition)
        except PartitionMoved as moved:
            self.partition = None
            self.moves.append(moved)
            if self.instance is not None:
                raise
            try:
                return op(None)
            except DomainError as exc:
                if exc.field == "instance":  # this instance serves no partition now
                    raise moved from exc
                raise

    def enqueue_many(
        self, messages: list[engine.NewMessage], *, key: str | None = None
    ) -> list[int]:
        def op(partition: str | None) -> services.Placed:
            return services.logical_enqueue(
                user=self.user,
                logical_queue=self.logical_queue,
                messages=messages,
                instance=self.instance,
                key=key,
                partition=None if key else partition,
                session=self.session,
            )

        placed = self._call(op)
        self._keep(placed, key)
        return placed.ids

    def enqueue(self, payload: Any, *, key: str | None = None, **properties: Any) -> int:
        return self.enqueue_many([engine.NewMessage(payload=payload, **properties)], key=key)[0]

    def dequeue(
        self, *, key: str | None = None, ordered: bool = False, **request: Any
    ) -> list[engine.DequeuedMessage]:
        """``request``: the fields of queues.services.DequeueRequest (batch, wait, mode, …). A
        ``wait`` in progress ends early when the partition moves (see the module's docstring)."""

        def op(partition: str | None) -> services.Placed:
            return services.logical_dequeue(
                user=self.user,
                logical_queue=self.logical_queue,
                request=DequeueRequest(**request),
                instance=self.instance,
                key=key,
                partition=None if key else partition,
                ordered=ordered,
                session=self.session,
            )

        placed = self._call(op)
        self._keep(placed, key)
        return placed.messages
