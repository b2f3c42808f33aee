"""API views of the gateway: the same selectors, FilterSets and services as the pages. Every
verb is one service call; DomainErrors become 400/403/404/409 in core.api.exceptions."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.mixins import BulkActionMixin, NameOrIdLookupMixin
from core.choices import Capability
from core.lookups import name_or_id_q
from gateway import selectors, services
from gateway.api import serializers as s
from gateway.bulk import JOB_BULK
from gateway.filtersets import AgentFilterSet, ForeignQueueFilterSet, JobFilterSet, LinkFilterSet
from gateway.models import Agent, ForeignQueue, Job, Link
from gateway.views import LOG_LINES

NAME_OR_ID = "Name or id."


def _foreign_queue_name_q(key: str) -> Q:
    """A foreign queue is named NAME@LINK."""
    name, _, link = key.upper().partition("@")
    return Q(name=name, link__name=link)


class AgentViewSet(NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Messaging Gateway agents (DBMS_MGWADM *_AGENT, STARTUP, SHUTDOWN, SET_LOG_LEVEL,
    CLEANUP_GATEWAY, SET_OPTION/REMOVE_OPTION with AGENT_JAVA_PROP) and their log."""

    serializer_class = s.GatewayAgentSerializer
    filterset_class = AgentFilterSet
    ordering_fields = ["name", "status", "start_time", "created"]
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]
    # Writes not listed (create, alter, remove, options) need CONFIGURE.
    action_capabilities = {
        "startup": Capability.OPERATE,
        "shutdown": Capability.OPERATE,
        "set_log_level": Capability.OPERATE,
        "cleanup": Capability.OPERATE,
    }

    def get_queryset(self) -> QuerySet[Agent]:
        return selectors.agent_list().order_by("name")  # annotated: Meta.ordering is lost

    def get_serializer_context(self) -> dict[str, Any]:
        # AGENT_PING reads pg_locks, the placement the instances: once per request, not per row.
        return {
            **super().get_serializer_context(),
            "live": selectors.live_agent_ids(),
            "placements": selectors.agent_placements(),
        }

    def _shown(self, agent: Agent) -> dict[str, Any]:
        """The agent as retrieve shows it, re-read after a write."""
        return s.GatewayAgentSerializer(
            selectors.agent_list().get(pk=agent.pk), context=self.get_serializer_context()
        ).data

    @extend_schema(
        request=s.GatewayAgentCreateSerializer, responses={201: s.GatewayAgentSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """CREATE_AGENT."""
        ser = s.GatewayAgentCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = dict(ser.validated_data)
        agent = services.agent_create(user=request.user, name=d.pop("agent_name"), **d)
        return Response(self._shown(agent), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.GatewayAgentAlterSerializer, responses=s.GatewayAgentSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """ALTER_AGENT: only the fields given change (PUT and PATCH alike)."""
        agent = self.get_object()
        ser = s.GatewayAgentAlterSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.agent_alter(user=request.user, agent=agent, **ser.changes())
        return Response(self._shown(agent))

    @extend_schema(request=s.GatewayAgentAlterSerializer, responses=s.GatewayAgentSerializer)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, **kwargs)

    def perform_destroy(self, instance: Agent) -> None:
        """REMOVE_AGENT (409 for DEFAULT_AGENT, an agent with links, or one not stopped)."""
        services.agent_remove(user=self.request.user, agent=instance)

    @extend_schema(request=None, responses=s.GatewayAgentSerializer)
    @action(detail=True, methods=["post"])
    def startup(self, request: Request, pk: str | None = None) -> Response:
        """STARTUP: START_SCHEDULED; a worker on mgw.<NAME> starts the agent."""
        agent = services.agent_startup(user=request.user, agent=self.get_object())
        return Response(self._shown(agent))

    @extend_schema(request=s.ShutdownSerializer, responses=s.GatewayAgentSerializer)
    @action(detail=True, methods=["post"])
    def shutdown(self, request: Request, pk: str | None = None) -> Response:
        """SHUTDOWN, mode NORMAL (default) or IMMEDIATE."""
        ser = s.ShutdownSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        agent = services.agent_shutdown(
            user=request.user, agent=self.get_object(), mode=ser.validated_data["mode"]
        )
        return Response(self._shown(agent))

    @extend_schema(request=s.LogLevelSerializer, responses=s.GatewayAgentSerializer)
    @action(detail=True, methods=["post"], url_path="set-log-level", url_name="set-log-level")
    def set_log_level(self, request: Request, pk: str | None = None) -> Response:
        """SET_LOG_LEVEL 0-4."""
        ser = s.LogLevelSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        agent = services.agent_set_log_level(
            user=request.user, agent=self.get_object(), **ser.validated_data
        )
        return Response(self._shown(agent))

    @extend_schema(request=s.CleanupSerializer, responses=s.GatewayAgentSerializer)
    @action(detail=True, methods=["post"])
    def cleanup(self, request: Request, pk: str | None = None) -> Response:
        """CLEANUP_GATEWAY(action, sarg)."""
        ser = s.CleanupSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        agent = services.agent_cleanup(
            user=request.user, agent=self.get_object(), **ser.validated_data
        )
        return Response(self._shown(agent))

    @extend_schema(
        methods=["GET"],
        request=None,
        responses=s.GatewayAgentOptionSerializer(many=True),
        filters=False,
    )
    @extend_schema(
        methods=["POST"],
        request=s.GatewayAgentOptionSetSerializer,
        responses=s.GatewayAgentOptionSerializer(many=True),
    )
    @extend_schema(
        methods=["DELETE"],
        request=None,
        parameters=[OpenApiParameter("name", OpenApiTypes.STR, required=True)],
        responses={204: None},
    )
    # Not a method named ``options``: that name is APIView's handler of the HTTP OPTIONS verb.
    # A plain list, not a page: pagination_class=None says so to the schema.
    @action(
        detail=True,
        methods=["get", "post", "delete"],
        url_path="options",
        url_name="options",
        pagination_class=None,
    )
    def agent_options(self, request: Request, pk: str | None = None) -> Response:
        """The agent's options: GET lists them (encrypted values as <<ENCRYPTED>>), POST sets
        one (SET_OPTION), DELETE ?name= removes one (REMOVE_OPTION)."""
        agent = self.get_object()
        if request.method == "POST":
            ser = s.GatewayAgentOptionSetSerializer(data=request.data)
            ser.is_valid(raise_exception=True)
            services.agent_option_set(user=request.user, agent=agent, **ser.validated_data)
        elif request.method == "DELETE":
            ser = s.OptionNameSerializer(data=request.query_params or request.data)
            ser.is_valid(raise_exception=True)
            services.agent_option_remove(user=request.user, agent=agent, **ser.validated_data)
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(
            s.GatewayAgentOptionSerializer(agent.options.order_by("name"), many=True).data
        )

    @extend_schema(
        responses=s.GatewayAgentLogLineSerializer(many=True),
        filters=False,
        parameters=[
            OpenApiParameter("severity", OpenApiTypes.STR, enum=["WARN", "ERROR"]),
            OpenApiParameter("limit", OpenApiTypes.INT, description=f"At most 1000; {LOG_LINES}."),
        ],
    )
    # A plain list (``limit`` caps it), not a page: pagination_class=None says so to the schema.
    @action(detail=True, methods=["get"], pagination_class=None)
    def log(self, request: Request, pk: str | None = None) -> Response:
        """The agent log, newest first; ``severity=WARN`` keeps WARN and ERROR lines."""
        try:
            limit = min(max(int(request.query_params.get("limit", LOG_LINES)), 1), 1000)
        except ValueError:
            return Response({"limit": ["A number of lines."]}, status=400)
        severity = request.query_params.get("severity", "")
        if severity not in ("", "WARN", "ERROR"):
            return Response({"severity": ["WARN or ERROR."]}, status=400)
        lines = selectors.agent_log(self.get_object(), limit=limit, min_severity=severity)
        return Response(s.GatewayAgentLogLineSerializer(lines, many=True).data)


class LinkViewSet(NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Messaging system links (CREATE/ALTER/REMOVE_MSGSYSTEM_LINK, MSGLINK_OPTION options) and
    Test connection. The password is write-only."""

    serializer_class = s.LinkSerializer
    filterset_class = LinkFilterSet
    ordering_fields = ["name", "link_type", "created"]
    action_capabilities = {"test_connection": Capability.OPERATE}

    def get_queryset(self) -> QuerySet[Link]:
        return selectors.link_list().order_by("name")  # annotated: Meta.ordering is lost

    def _shown(self, link: Link) -> dict[str, Any]:
        return s.LinkSerializer(selectors.link_list().get(pk=link.pk)).data

    @extend_schema(request=s.LinkCreateSerializer, responses={201: s.LinkSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """CREATE_MSGSYSTEM_LINK (agent default DEFAULT_AGENT)."""
        ser = s.LinkCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = dict(ser.validated_data)
        link = services.link_create(user=request.user, name=d.pop("linkname"), **d)
        return Response(self._shown(link), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.LinkAlterSerializer, responses=s.LinkSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """ALTER_MSGSYSTEM_LINK: only the fields given change (PUT and PATCH alike)."""
        link = self.get_object()
        ser = s.LinkAlterSerializer(data=request.data, link=link)
        ser.is_valid(raise_exception=True)
        services.link_alter(user=request.user, link=link, **ser.changes())
        return Response(self._shown(link))

    @extend_schema(request=s.LinkAlterSerializer, responses=s.LinkSerializer)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, **kwargs)

    def perform_destroy(self, instance: Link) -> None:
        """REMOVE_MSGSYSTEM_LINK (409 while foreign queues are registered on it)."""
        services.link_remove(user=self.request.user, link=instance)

    @extend_schema(request=None, responses=s.LinkTestSerializer)
    @action(detail=True, methods=["post"], url_path="test-connection", url_name="test-connection")
    def test_connection(self, request: Request, pk: str | None = None) -> Response:
        """Connect and authenticate: ``ok`` and the server's description or why it failed."""
        ok, text = services.link_test(user=request.user, link=self.get_object())
        return Response({"ok": ok, "detail": text})

    @extend_schema(methods=["POST"], request=s.LinkOptionSetSerializer, responses=s.LinkSerializer)
    @extend_schema(
        methods=["DELETE"],
        request=None,
        parameters=[OpenApiParameter("name", OpenApiTypes.STR, required=True)],
        responses=s.LinkSerializer,
    )
    @action(detail=True, methods=["post", "delete"], url_path="options", url_name="options")
    def link_options(self, request: Request, pk: str | None = None) -> Response:
        """POST sets one option (SET_OPTION MSGLINK_OPTION; names the driver knows), DELETE
        ?name= removes one."""
        link = self.get_object()
        if request.method == "POST":
            ser = s.LinkOptionSetSerializer(data=request.data)
            ser.is_valid(raise_exception=True)
            link = services.link_option_set(user=request.user, link=link, **ser.validated_data)
        else:
            ser = s.OptionNameSerializer(data=request.query_params or request.data)
            ser.is_valid(raise_exception=True)
            link = services.link_option_remove(user=request.user, link=link, **ser.validated_data)
        return Response(self._shown(link))


class ForeignQueueViewSet(viewsets.ModelViewSet):
    """Registered foreign queues (REGISTER/UNREGISTER_FOREIGN_QUEUE), addressed by id or
    NAME@LINK. Registering creates nothing in the foreign system."""

    serializer_class = s.ForeignQueueSerializer
    filterset_class = ForeignQueueFilterSet
    ordering_fields = ["name", "created"]
    http_method_names = ["get", "post", "delete", "head", "options"]
    lookup_value_regex = r"[^/]+"

    def get_queryset(self) -> QuerySet[ForeignQueue]:
        return selectors.foreign_queue_list()

    def get_object(self) -> ForeignQueue:
        key = self.kwargs[self.lookup_field]
        qs = self.get_queryset()
        where = name_or_id_q(key, _foreign_queue_name_q)
        obj = None if where is None else qs.filter(where).first()
        if obj is None:
            raise Http404(f"No such foreign queue: {key}.")
        self.check_object_permissions(self.request, obj)
        return obj

    @extend_schema(
        request=s.ForeignQueueRegisterSerializer, responses={201: s.ForeignQueueSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """REGISTER_FOREIGN_QUEUE."""
        ser = s.ForeignQueueRegisterSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        fq = services.foreign_queue_register(user=request.user, **ser.validated_data)
        shown = s.ForeignQueueSerializer(selectors.foreign_queue_list().get(pk=fq.pk)).data
        return Response(shown, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ForeignQueue) -> None:
        """UNREGISTER_FOREIGN_QUEUE (409 while a job uses it)."""
        services.foreign_queue_unregister(user=self.request.user, foreign_queue=instance)


class JobViewSet(BulkActionMixin, NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Gateway propagation jobs (CREATE/ALTER/REMOVE_JOB, ENABLE/DISABLE/RESET_JOB). Every verb
    but remove is refused with 409 on a DELETE_PENDING job."""

    serializer_class = s.JobSerializer
    filterset_class = JobFilterSet
    ordering_fields = ["name", "status", "propagated_msgs", "failures", "created"]
    bulk_actions = JOB_BULK
    action_capabilities = {
        "bulk": Capability.VIEW,  # core.bulk asks what the chosen verb needs
        "enable": Capability.OPERATE,
        "disable": Capability.OPERATE,
        "reset": Capability.OPERATE,
    }

    def get_queryset(self) -> QuerySet[Job]:
        return selectors.job_list()

    def _shown(self, job: Job) -> dict[str, Any]:
        return s.JobSerializer(selectors.job_list().get(pk=job.pk)).data

    @extend_schema(request=s.JobCreateSerializer, responses={201: s.JobSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """CREATE_JOB."""
        ser = s.JobCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        job = services.job_create(user=request.user, **ser.validated_data)
        return Response(self._shown(job), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.JobAlterSerializer, responses=s.JobSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """ALTER_JOB: absent fields stay (PUT and PATCH alike)."""
        job = self.get_object()
        ser = s.JobAlterSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.job_alter(user=request.user, job=job, **ser.changes())
        return Response(self._shown(job))

    @extend_schema(request=s.JobAlterSerializer, responses=s.JobSerializer)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, **kwargs)

    def _removed(self, job: Job, *, force: bool) -> Response:
        pending = services.job_remove(user=self.request.user, job=job, force=force)
        if pending is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(self._shown(pending), status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: s.JobSerializer, 204: None})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """REMOVE_JOB without force: 202 with the DELETE_PENDING job (its agent finishes the
        removal), 204 once gone."""
        return self._removed(self.get_object(), force=False)

    @extend_schema(request=s.JobRemoveSerializer, responses={202: s.JobSerializer, 204: None})
    @action(detail=True, methods=["post"])
    def remove(self, request: Request, pk: str | None = None) -> Response:
        """REMOVE_JOB(force): force removes it at once, leaving the foreign side as it is."""
        ser = s.JobRemoveSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        return self._removed(self.get_object(), force=ser.validated_data["force"])

    @extend_schema(request=None, responses=s.JobSerializer)
    @action(detail=True, methods=["post"])
    def enable(self, request: Request, pk: str | None = None) -> Response:
        """ENABLE_JOB."""
        return Response(self._shown(services.job_enable(user=request.user, job=self.get_object())))

    @extend_schema(request=None, responses=s.JobSerializer)
    @action(detail=True, methods=["post"])
    def disable(self, request: Request, pk: str | None = None) -> Response:
        """DISABLE_JOB."""
        return Response(self._shown(services.job_disable(user=request.user, job=self.get_object())))

    @extend_schema(request=None, responses=s.JobSerializer)
    @action(detail=True, methods=["post"])
    def reset(self, request: Request, pk: str | None = None) -> Response:
        """RESET_JOB: READY, failures 0, retried at once."""
        return Response(self._shown(services.job_reset(user=request.user, job=self.get_object())))
