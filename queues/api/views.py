"""API views of the queues app: the same selectors, FilterSets and services as the pages."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.mixins import BulkActionMixin, NameOrIdLookupMixin
from core.choices import Capability
from core.exceptions import DomainError
from queues import selectors, services
from queues.api import serializers as s
from queues.bulk import QUEUE_BULK
from queues.filtersets import (
    AgentFilterSet,
    MessageFilterSet,
    OwnerMoveFilterSet,
    QueueFilterSet,
    QueuePrivilegeFilterSet,
    QueueTableFilterSet,
    SubscriberFilterSet,
)
from queues.models import Agent, Queue, QueueTable, QueueTableOwnerMove


class QueueTableViewSet(NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Queue tables (DBMS_AQADM.CREATE_QUEUE_TABLE / DROP_QUEUE_TABLE)."""

    serializer_class = s.QueueTableSerializer
    filterset_class = QueueTableFilterSet
    ordering_fields = ["name", "sort_order", "created"]

    def get_queryset(self) -> QuerySet[QueueTable]:
        return selectors.queue_table_list()

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        if self.action in ("update", "partial_update"):
            return s.QueueTableUpdateSerializer
        return s.QueueTableSerializer

    def perform_create(self, serializer: s.QueueTableSerializer) -> None:
        qt = services.queue_table_create(user=self.request.user, **serializer.validated_data)
        # Read back through the selector: queue_count is one of its annotations.
        serializer.instance = selectors.queue_table_list().get(pk=qt.pk)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        qt = self.get_object()
        ser = s.QueueTableUpdateSerializer(qt, data=request.data, partial=True)
        ser.is_valid(raise_exception=True)
        qt = services.queue_table_update(user=request.user, queue_table=qt, **ser.validated_data)
        return Response(s.QueueTableSerializer(selectors.queue_table_list().get(pk=qt.pk)).data)

    def perform_destroy(self, instance: QueueTable) -> None:
        services.queue_table_delete(user=self.request.user, queue_table=instance)


class OwnerMoveViewSet(viewsets.ReadOnlyModelViewSet):
    """The ownership log: each change of a queue table's owner instance (failover to the
    secondary, failback to the primary, a new primary), newest first."""

    serializer_class = s.OwnerMoveSerializer
    filterset_class = OwnerMoveFilterSet
    ordering_fields = ["at"]

    def get_queryset(self) -> QuerySet[QueueTableOwnerMove]:
        return selectors.owner_move_list()


class QueueViewSet(BulkActionMixin, NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Queues, and the application endpoints to enqueue, dequeue, acknowledge and release."""

    serializer_class = s.QueueSerializer
    filterset_class = QueueFilterSet
    ordering_fields = ["name", "depth_ready", "depth_expired", "enqueued", "dequeued", "created"]
    bulk_actions = QUEUE_BULK
    action_capabilities = {
        "bulk": Capability.VIEW,  # core.bulk asks what the chosen verb needs
        "start": Capability.OPERATE,
        "stop": Capability.OPERATE,
        "enqueue": Capability.OPERATE,
        # BROWSE needs only VIEW; the service asks OPERATE for REMOVE and LOCKED.
        "dequeue": Capability.VIEW,
        "ack": Capability.OPERATE,
        "release": Capability.OPERATE,
        "purge": Capability.OPERATE,
        "replay": Capability.OPERATE,
        "set_up_queue": Capability.CONFIGURE,
    }

    def get_queryset(self) -> QuerySet[Queue]:
        return selectors.queue_list()

    @extend_schema(request=s.SetUpQueueSerializer, responses={201: s.SetUpQueueResultSerializer})
    @action(detail=False, methods=["post"], url_path="set_up_queue")
    def set_up_queue(self, request: Request) -> Response:
        """DBMS_STREAMS_ADM.SET_UP_QUEUE: the Streams queue table (created if missing: ANY,
        multi-consumer, secure, TRANSACTIONAL, commit_time), the queue, and ``queue_user``'s agent,
        access and ENQUEUE/DEQUEUE privileges, in one transaction. A rerun for another user only
        configures that user."""
        ser = s.SetUpQueueSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        done = services.set_up_queue(user=request.user, **ser.validated_data)
        body = {
            "queue_table": s.QueueTableSerializer(
                selectors.queue_table_list().get(pk=done.queue_table.pk)
            ).data,
            "queue": s.QueueSerializer(selectors.queue_list().get(pk=done.queue.pk)).data,
            "agent": done.agent.name if done.agent else None,
            "queue_table_created": done.queue_table_created,
            "queue_created": done.queue_created,
            "agent_created": done.agent_created,
        }
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_create(self, serializer: s.QueueSerializer) -> None:
        queue = services.queue_create(user=self.request.user, **serializer.validated_data)
        serializer.instance = selectors.queue_list().get(pk=queue.pk)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queue = self.get_object()
        ser = s.QueueUpdateSerializer(queue, data=request.data, partial=True)
        ser.is_valid(raise_exception=True)
        services.queue_update(user=request.user, queue=queue, **ser.validated_data)
        return Response(s.QueueSerializer(selectors.queue_list().get(pk=queue.pk)).data)

    def perform_destroy(self, instance: Queue) -> None:
        services.queue_delete(user=self.request.user, queue=instance)

    def _flags(self, request: Request) -> dict[str, bool]:
        # A body that is not an object ([1, 2], "text", null) is a mistake, not "both".
        if not hasattr(request.data, "get"):
            raise DomainError('Send a JSON object, for example {"what": "both"}.', field="what")
        ser = s.QueueFlagsSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        what = ser.validated_data["what"]
        return {"enqueue": what in ("enqueue", "both"), "dequeue": what in ("dequeue", "both")}

    @extend_schema(request=s.QueueFlagsSerializer, responses=s.QueueSerializer)
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str | None = None) -> Response:
        """START_QUEUE; body ``{"what": "enqueue" | "dequeue" | "both"}`` (default both)."""
        queue = services.queue_start(
            user=request.user, queue=self.get_object(), **self._flags(request)
        )
        return Response(s.QueueSerializer(selectors.queue_list().get(pk=queue.pk)).data)

    @extend_schema(request=s.QueueFlagsSerializer, responses=s.QueueSerializer)
    @action(detail=True, methods=["post"])
    def stop(self, request: Request, pk: str | None = None) -> Response:
        """STOP_QUEUE; body ``{"what": "enqueue" | "dequeue" | "both"}`` (default both)."""
        queue = services.queue_stop(
            user=request.user, queue=self.get_object(), **self._flags(request)
        )
        return Response(s.QueueSerializer(selectors.queue_list().get(pk=queue.pk)).data)

    @extend_schema(request=s.EnqueueSerializer, responses={201: s.EnqueueResultSerializer})
    @action(detail=True, methods=["post"])
    def enqueue(self, request: Request, pk: str | None = None) -> Response:
        """Enqueue one message, or ``{"messages": [...]}`` in one transaction. With
        ``delivery_mode: BUFFERED`` they go to the queue's buffer at once, outside any
        transaction (409 ``flow_control`` while its subscribers are behind)."""
        queue = self.get_object()
        ser = s.EnqueueSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        msgs = [s.NewMessageSerializer().to_message(m) for m in ser.validated_data["messages"]]
        ids = services.message_enqueue(
            user=request.user,
            queue=queue,
            messages=msgs,
            visibility=ser.validated_data.get("visibility"),
            delivery_mode=ser.validated_data["delivery_mode"],
        )
        return Response({"ids": ids}, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.DequeueSerializer, responses=s.DequeueResultSerializer)
    @action(detail=True, methods=["post"])
    def dequeue(self, request: Request, pk: str | None = None) -> Response:
        """Dequeue in REMOVE, LOCKED or BROWSE mode. ``wait`` blocks up to N seconds for a
        message. NEXT_MESSAGE (the default) continues after ``cursor``, the position the previous
        answer returned; without one it starts at the head. FIRST_MESSAGE always starts there."""
        queue = self.get_object()
        ser = s.DequeueSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        got = services.message_dequeue(
            user=request.user, queue=queue, request=services.DequeueRequest(**ser.validated_data)
        )
        return Response(
            {
                "messages": s.DequeuedMessageSerializer(got, many=True).data,
                "cursor": got[-1].position.token() if got else ser.validated_data.get("cursor"),
            }
        )

    @extend_schema(request=s.LeaseSerializer, responses=s.DequeuedMessageSerializer)
    @action(detail=True, methods=["post"])
    def ack(self, request: Request, pk: str | None = None) -> Response:
        """Finish a LOCKED dequeue: the message is consumed."""
        ser = s.LeaseSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        msg = services.message_ack(
            user=request.user,
            queue=self.get_object(),
            msgid=d["msgid"],
            lock_token=str(d["lock_token"]),
            consumer_name=d.get("consumer_name"),
        )
        return Response(s.DequeuedMessageSerializer(msg).data)

    @extend_schema(request=s.LeaseSerializer, responses={204: None})
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str | None = None) -> Response:
        """Give back a LOCKED message; ``failed`` (default true) counts an attempt."""
        ser = s.LeaseSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        services.message_release(
            user=request.user,
            queue=self.get_object(),
            msgid=d["msgid"],
            lock_token=str(d["lock_token"]),
            consumer_name=d.get("consumer_name"),
            failed=d["failed"],
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.PurgeSerializer, responses=s.CountSerializer)
    @action(detail=True, methods=["post"])
    def purge(self, request: Request, pk: str | None = None) -> Response:
        """Remove the messages matching the condition; ``all: true`` is the confirmation needed
        to remove every message."""
        ser = s.PurgeSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        removed = services.queue_purge(
            user=request.user, queue=self.get_object(), condition=ser.condition(ser.validated_data)
        )
        return Response({"count": removed})

    @extend_schema(request=s.ReplaySerializer, responses=s.CountSerializer)
    @action(detail=True, methods=["post"])
    def replay(self, request: Request, pk: str | None = None) -> Response:
        """Move messages of an exception queue back to their original queues."""
        ser = s.ReplaySerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        moved = services.exception_queue_replay(
            user=request.user, queue=self.get_object(), ids=ser.validated_data.get("ids")
        )
        return Response({"count": moved})

    # The message filters this action takes, not the queues' (no filter backend runs here).
    @extend_schema(
        responses=s.MessageSerializer(many=True),
        parameters=[
            OpenApiParameter(name, str, description=str(f.label or name))
            for name, f in MessageFilterSet.base_filters.items()
        ],
    )
    @action(detail=True, methods=["get"], filter_backends=[])
    def messages(self, request: Request, pk: str | None = None) -> Response:
        """Every message of the queue in any state, paged, in dequeue order."""
        queue = self.get_object()
        filterset = MessageFilterSet(
            request.query_params, queryset=selectors.message_list(queue=queue)
        )
        if not filterset.is_valid():
            raise ValidationError(filterset.errors)  # as DjangoFilterBackend: 400 naming the filter
        qs = filterset.qs
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(s.MessageSerializer(page, many=True).data)


class MessageViewSet(viewsets.ReadOnlyModelViewSet):
    """Messages of every queue, read-only (they are written only by the queue engine)."""

    serializer_class = s.MessageSerializer
    filterset_class = MessageFilterSet
    ordering_fields = ["id", "enq_time", "priority"]
    action_capabilities = {"test": Capability.VIEW}

    def get_queryset(self) -> QuerySet:
        return selectors.message_list().select_related("queue")

    @extend_schema(request=s.MessageRuleTestSerializer, responses=dict)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Dry run of this queued message against a positive and an optional negative rule set:
        PERFORM or DISCARD with every rule's TRUE / FALSE / NULL. Nothing is written."""
        ser = s.MessageRuleTestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        return Response(
            selectors.message_rule_test(
                self.get_object(), positive=d["positive"], negative=d.get("negative")
            )
        )


class SubscriberViewSet(
    mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet
):
    serializer_class = s.SubscriberSerializer
    filterset_class = SubscriberFilterSet

    def get_queryset(self) -> QuerySet:
        return selectors.subscriber_list()

    def perform_create(self, serializer: s.SubscriberSerializer) -> None:
        d = serializer.validated_data
        serializer.instance = services.subscriber_add(
            user=self.request.user,
            queue=d["queue"],
            name=d["name"],
            address=d.get("address", ""),
            rule=d.get("rule", ""),
        )

    def perform_destroy(self, instance: Any) -> None:
        services.subscriber_remove(user=self.request.user, subscriber=instance)


class AgentViewSet(
    NameOrIdLookupMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """AQ agents; enable_access / disable_access are ENABLE_DB_ACCESS / DISABLE_DB_ACCESS."""

    serializer_class = s.AgentSerializer
    filterset_class = AgentFilterSet

    def get_queryset(self) -> QuerySet[Agent]:
        return selectors.agent_list()

    def perform_create(self, serializer: s.AgentSerializer) -> None:
        serializer.instance = services.agent_create(
            user=self.request.user, **serializer.validated_data
        )

    def perform_destroy(self, instance: Agent) -> None:
        services.agent_delete(user=self.request.user, agent=instance)

    @extend_schema(request=s.AgentAccessSerializer, responses=s.AgentSerializer)
    @action(detail=True, methods=["post"])
    def enable_access(self, request: Request, pk: str | None = None) -> Response:
        agent = self.get_object()
        ser = s.AgentAccessSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.agent_enable_db_access(
            user=request.user, agent=agent, db_user=ser.validated_data["user"]
        )
        return Response(s.AgentSerializer(selectors.agent_list().get(pk=agent.pk)).data)

    @extend_schema(request=s.AgentAccessSerializer, responses=s.AgentSerializer)
    @action(detail=True, methods=["post"])
    def disable_access(self, request: Request, pk: str | None = None) -> Response:
        agent = self.get_object()
        ser = s.AgentAccessSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.agent_disable_db_access(
            user=request.user, agent=agent, db_user=ser.validated_data["user"]
        )
        return Response(s.AgentSerializer(selectors.agent_list().get(pk=agent.pk)).data)


class QueuePrivilegeViewSet(
    mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet
):
    """GRANT_QUEUE_PRIVILEGE (create) and REVOKE_QUEUE_PRIVILEGE (delete)."""

    serializer_class = s.QueuePrivilegeSerializer
    filterset_class = QueuePrivilegeFilterSet

    def get_queryset(self) -> QuerySet:
        return selectors.queue_privilege_list()

    def perform_create(self, serializer: s.QueuePrivilegeSerializer) -> None:
        d = serializer.validated_data
        serializer.instance = services.queue_privilege_grant(
            user=self.request.user, queue=d["queue"], grantee=d["user"], privilege=d["privilege"]
        )

    def perform_destroy(self, instance: Any) -> None:
        services.queue_privilege_revoke(user=self.request.user, grant=instance)
