"""API of the parallel app: the same selectors and services as the pages."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.mixins import NameOrIdLookupMixin
from core.choices import Capability
from parallel import selectors, services
from parallel.api import serializers as s
from parallel.filtersets import LogicalQueueFilterSet
from parallel.models import LogicalQueue, LogicalQueuePartition
from queues.api.serializers import DequeuedMessageSerializer, NewMessageSerializer
from queues.services import DequeueRequest


def _placed(placed: services.Placed) -> dict[str, Any]:
    owner = placed.partition.queue.queue_table.owner_instance
    return {
        "partition": placed.partition.queue.name,
        "position": placed.partition.position,
        "instance": owner.name if owner else None,
        "ids": placed.ids,
        "session": str(placed.session) if placed.session else None,
    }


class LogicalQueueViewSet(NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Logical queues (S003's parallel queues): N physical queues with ring-assigned instances.
    Enqueue and dequeue go to a partition active on the caller's instance (server mode: this
    process's; fixed-client mode: ``instance``), or to a group ``key``'s partition."""

    serializer_class = s.LogicalQueueSerializer
    filterset_class = LogicalQueueFilterSet
    ordering_fields = ["name", "created"]
    action_capabilities = {
        "enqueue": Capability.OPERATE,
        "dequeue": Capability.OPERATE,
        "rebuild": Capability.CONFIGURE,
    }

    def get_queryset(self) -> QuerySet[LogicalQueue]:
        return selectors.logical_queue_list()

    def _answer(self, lq: LogicalQueue, code: int = status.HTTP_200_OK) -> Response:
        return Response(
            s.LogicalQueueSerializer(selectors.logical_queue_list().get(pk=lq.pk)).data,
            status=code,
        )

    @extend_schema(
        request=s.LogicalQueueCreateSerializer, responses={201: s.LogicalQueueSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create the logical queue, its queue tables and queues and the mapping in one
        transaction; ``warnings`` names instances no worker has reported."""
        ser = s.LogicalQueueCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        lq = services.logical_queue_create(user=request.user, **ser.validated_data)
        return self._answer(lq, status.HTTP_201_CREATED)

    @extend_schema(request=s.LogicalQueueUpdateSerializer, responses=s.LogicalQueueSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        lq = self.get_object()
        ser = s.LogicalQueueUpdateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.logical_queue_update(user=request.user, logical_queue=lq, **ser.validated_data)
        return self._answer(lq)

    def perform_destroy(self, instance: LogicalQueue) -> None:
        services.logical_queue_delete(user=self.request.user, logical_queue=instance)

    @extend_schema(request=s.LogicalEnqueueSerializer, responses={201: s.PlacedSerializer})
    @action(detail=True, methods=["post"])
    def enqueue(self, request: Request, pk: str | None = None) -> Response:
        """Enqueue one message (or ``messages``, one transaction) on one partition; the answer
        names it and the client ``session``: send the session back to keep both. Persistent
        only. 409 ``partition_moved`` (partition, from, to): the session's partition moved to
        another instance (failover); call again to get another partition of your instance."""
        lq = self.get_object()
        ser = s.LogicalEnqueueSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        placed = services.logical_enqueue(
            user=request.user,
            logical_queue=lq,
            messages=[NewMessageSerializer().to_message(m) for m in d["messages"]],
            instance=d.get("instance"),
            key=d.get("key"),
            partition=d.get("partition"),
            visibility=d.get("visibility"),
            delivery_mode=d["delivery_mode"],
            session=d.get("session") or uuid.uuid4(),
        )
        return Response(_placed(placed), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.LogicalDequeueSerializer, responses=s.PlacedSerializer)
    @action(detail=True, methods=["post"])
    def dequeue(self, request: Request, pk: str | None = None) -> Response:
        """Dequeue from the session's partition, then the instance's other partitions; with
        ``key``, from that group's partition. No selector (correlation, msgid, condition) and no
        buffered messages: refused with the reason. 409 ``partition_moved`` as for enqueue; a
        ``wait`` in progress ends with it within AQ_PARALLEL_FAILOVER_CHECK_S."""
        lq = self.get_object()
        ser = s.LogicalDequeueSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = dict(ser.validated_data)
        routing = {k: d.pop(k, None) for k in s.ROUTING}
        routing["session"] = routing["session"] or uuid.uuid4()  # a new client session
        ordered = d.pop("ordered")
        placed = services.logical_dequeue(
            user=request.user,
            logical_queue=lq,
            request=DequeueRequest(**d),
            ordered=ordered,
            **routing,
        )
        body = _placed(placed)
        body["messages"] = DequeuedMessageSerializer(placed.messages, many=True).data
        return Response(body)

    @extend_schema(request=s.RebuildSerializer, responses=s.RebuildResultSerializer)
    @action(detail=True, methods=["post"])
    def rebuild(self, request: Request, pk: str | None = None) -> Response:
        """Recompute a balanced ring of primary and secondary instances over ``instances``
        (default: the instances up now), after instances were added or removed."""
        ser = s.RebuildSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        done = services.logical_queue_rebuild(
            user=request.user,
            logical_queue=self.get_object(),
            instances=ser.validated_data.get("instances"),
        )
        return Response({"instances": done.instances, "changed": done.changed})

    @extend_schema(
        responses=s.BalanceSerializer,
        parameters=[
            OpenApiParameter(
                "instance", str, description="Whose least-loaded queue (default: this process's)."
            )
        ],
    )
    @action(detail=True, methods=["get"], filter_backends=[])
    def balance(self, request: Request, pk: str | None = None) -> Response:
        """Each partition's depth, counters and rates, the max/min depth ratio and the
        least-loaded queue on an instance. Estimates, as Oracle's GV$ views are."""
        return Response(
            selectors.logical_queue_balance(
                self.get_object(), instance=request.query_params.get("instance") or None
            )
        )


class PartitionViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """The mapping (S003's user-maintained queue_table_view); only ``purpose`` is editable.
    ``?logical_queue=<name>`` lists one logical queue's partitions."""

    serializer_class = s.PartitionSerializer

    def get_queryset(self) -> QuerySet[LogicalQueuePartition]:
        qs = selectors.partition_list()
        name = self.request.query_params.get("logical_queue")
        return qs.filter(logical_queue__name__iexact=name) if name else qs

    @extend_schema(request=s.PartitionUpdateSerializer, responses=s.PartitionSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        part = self.get_object()
        ser = s.PartitionUpdateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.logical_partition_update(
            user=request.user, partition=part, purpose=ser.validated_data["purpose"]
        )
        return Response(s.PartitionSerializer(self.get_queryset().get(pk=part.pk)).data)
