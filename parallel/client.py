"""A small Python client of a logical queue, for code running in this project's processes (a
Celery task, a script under ``manage.py shell``); HTTP clients use /api/logical-queues/ the same
way. One object is one session of the white paper: it picks a partition once and keeps it.

    orders = LogicalQueueClient("ORDERS")                  # server mode: AQ_INSTANCE_NAME
    orders = LogicalQueueClient("ORDERS", instance="n2")   # fixed-client mode
    orders.enqueue({"id": 1})
    orders.enqueue({"part": 1}, key="order-42")            # ordered group: one partition
    orders.dequeue()                                       # [DequeuedMessage]
"""

from __future__ import annotations

from typing import Any

from parallel import services
from queues import engine
from queues.services import DequeueRequest


class LogicalQueueClient:
    def __init__(self, logical_queue: str, *, user: Any = None, instance: str | None = None):
        self.logical_queue = services.logical_queue_resolve(logical_queue)
        self.user = user
        self.instance = instance  # None: server mode (this process's AQ_INSTANCE_NAME)
        self.partition: str | None = None  # the session's partition, once chosen

    def _keep(self, placed: services.Placed, key: str | None) -> None:
        if key is None:  # a group's partition is the key's, not the session's
            self.partition = placed.partition.queue.name

    def enqueue_many(
        self, messages: list[engine.NewMessage], *, key: str | None = None
    ) -> list[int]:
        placed = services.logical_enqueue(
            user=self.user,
            logical_queue=self.logical_queue,
            messages=messages,
            instance=self.instance,
            key=key,
            partition=None if key else self.partition,
        )
        self._keep(placed, key)
        return placed.ids

    def enqueue(self, payload: Any, *, key: str | None = None, **properties: Any) -> int:
        return self.enqueue_many([engine.NewMessage(payload=payload, **properties)], key=key)[0]

    def dequeue(
        self, *, key: str | None = None, ordered: bool = False, **request: Any
    ) -> list[engine.DequeuedMessage]:
        """``request``: the fields of queues.services.DequeueRequest (batch, wait, mode, …)."""
        placed = services.logical_dequeue(
            user=self.user,
            logical_queue=self.logical_queue,
            request=DequeueRequest(**request),
            instance=self.instance,
            key=key,
            partition=None if key else self.partition,
            ordered=ordered,
        )
        self._keep(placed, key)
        return placed.messages
