"""API views of the jobs app: the same selectors, FilterSets and services as the pages."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django_filters.utils import translate_validation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.mixins import BulkActionMixin, NameOrIdLookupMixin
from core.choices import Capability
from jobs import selectors, services
from jobs.api import serializers as s
from jobs.bulk import PROPAGATION_BULK
from jobs.choices import RunState
from jobs.filtersets import PropagationFilterSet, PropagationRunFilterSet, SparkJobFilterSet
from jobs.models import Propagation, PropagationRun, SparkJob


def _shown(propagation: Propagation) -> dict[str, Any]:
    """A propagation as the lists show it, re-read after a write so state and counters are
    those the write left."""
    return s.PropagationShownSerializer(selectors.propagation_get(propagation.pk)).data


class PropagationViewSet(BulkActionMixin, NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Propagations (DBMS_PROPAGATION_ADM) and their schedules (DBMS_AQADM's *_PROPAGATION*
    procedures): every verb is one service, refused with 409 when the state does not allow it."""

    serializer_class = s.PropagationSerializer
    filterset_class = PropagationFilterSet
    ordering_fields = ["name", "state", "backlog", "oldest_backlog", "rate", "created"]
    # Writes not listed here (create, update, delete, schedule, alter, unschedule) need CONFIGURE.
    bulk_actions = PROPAGATION_BULK
    action_capabilities = {
        "bulk": Capability.VIEW,  # core.bulk asks what the chosen verb needs
        "start": Capability.OPERATE,
        "stop": Capability.OPERATE,
        "enable": Capability.OPERATE,
        "disable": Capability.OPERATE,
        "reset": Capability.OPERATE,
    }

    def get_queryset(self) -> QuerySet[Propagation]:
        return selectors.propagation_list()

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        if self.action == "create":
            return s.PropagationCreateSerializer
        if self.action in ("update", "partial_update"):
            return s.PropagationUpdateSerializer
        if self.action == "retrieve":
            return s.PropagationShownSerializer
        return s.PropagationSerializer

    @extend_schema(
        request=s.PropagationCreateSerializer, responses={201: s.PropagationShownSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        ser = s.PropagationCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        prop = services.propagation_create(user=request.user, **ser.validated_data)
        return Response(_shown(prop), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.PropagationUpdateSerializer, responses=s.PropagationShownSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Rule sets and comment; PUT and PATCH both change only what they name."""
        prop = self.get_object()
        ser = s.PropagationUpdateSerializer(data=request.data, partial=True)
        ser.is_valid(raise_exception=True)
        services.propagation_update(user=request.user, propagation=prop, **ser.changes(prop))
        return Response(_shown(prop))

    @extend_schema(request=s.PropagationUpdateSerializer, responses=s.PropagationShownSerializer)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, **kwargs)

    def perform_destroy(self, instance: Propagation) -> None:
        services.propagation_delete(user=self.request.user, propagation=instance)

    # --- verbs: each is one service ------------------------------------------------------------

    @extend_schema(request=None, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str | None = None) -> Response:
        """START_PROPAGATION (409 if it is started)."""
        prop = services.propagation_start(user=request.user, propagation=self.get_object())
        return Response(_shown(prop))

    @extend_schema(request=None, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"])
    def stop(self, request: Request, pk: str | None = None) -> Response:
        """STOP_PROPAGATION: a running window stops at its next heartbeat (409 if stopped)."""
        prop = services.propagation_stop(user=request.user, propagation=self.get_object())
        return Response(_shown(prop))

    @extend_schema(
        request=s.ScheduleParamsSerializer, responses={201: s.PropagationShownSerializer}
    )
    @action(detail=True, methods=["post"])
    def schedule(self, request: Request, pk: str | None = None) -> Response:
        """SCHEDULE_PROPAGATION with the given parameters (409 if it is scheduled)."""
        prop = self.get_object()
        ser = s.ScheduleParamsSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.schedule_create(user=request.user, propagation=prop, **ser.validated_data)
        return Response(_shown(prop), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ScheduleParamsSerializer, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"], url_path="alter-schedule", url_name="alter-schedule")
    def alter_schedule(self, request: Request, pk: str | None = None) -> Response:
        """ALTER_PROPAGATION_SCHEDULE: only the parameters given change (409 if unscheduled)."""
        prop = self.get_object()
        ser = s.ScheduleParamsSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.schedule_update(user=request.user, propagation=prop, **ser.validated_data)
        return Response(_shown(prop))

    @extend_schema(request=None, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"])
    def enable(self, request: Request, pk: str | None = None) -> Response:
        """ENABLE_PROPAGATION_SCHEDULE (409 if enabled or unscheduled)."""
        prop = self.get_object()
        services.schedule_enable(user=request.user, propagation=prop)
        return Response(_shown(prop))

    @extend_schema(request=None, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"])
    def disable(self, request: Request, pk: str | None = None) -> Response:
        """DISABLE_PROPAGATION_SCHEDULE (409 if disabled or unscheduled)."""
        prop = self.get_object()
        services.schedule_disable(user=request.user, propagation=prop)
        return Response(_shown(prop))

    @extend_schema(request=None, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"])
    def reset(self, request: Request, pk: str | None = None) -> Response:
        """Clear the failures and re-enable a schedule they disabled (409 with no failures)."""
        prop = self.get_object()
        services.schedule_reset(user=request.user, propagation=prop)
        return Response(_shown(prop))

    @extend_schema(request=None, responses=s.PropagationShownSerializer)
    @action(detail=True, methods=["post"])
    def unschedule(self, request: Request, pk: str | None = None) -> Response:
        """UNSCHEDULE_PROPAGATION: the propagation stays, without windows (409 if unscheduled)."""
        prop = self.get_object()
        services.schedule_delete(user=request.user, propagation=prop)
        return Response(_shown(prop))

    @extend_schema(
        responses=s.PropagationRunSerializer(many=True),
        filters=False,
        parameters=[
            OpenApiParameter("state", OpenApiTypes.STR, many=True, enum=RunState.values),
            OpenApiParameter("worker", OpenApiTypes.STR, description="Part of the hostname."),
            OpenApiParameter("failed", OpenApiTypes.BOOL),
        ],
        description="The propagation's runs, newest first (PropagationRunFilterSet's filters).",
    )
    @action(detail=True, methods=["get"])
    def runs(self, request: Request, pk: str | None = None) -> Response:
        prop = self.get_object()
        runs = PropagationRunFilterSet(
            request.query_params, queryset=selectors.run_list(propagation=prop)
        )
        if not runs.is_valid():  # as the filter backend does: a bad value is a 400 naming it
            raise translate_validation(runs.errors)
        page = self.paginate_queryset(runs.qs)
        return self.get_paginated_response(s.PropagationRunSerializer(page, many=True).data)


class PropagationRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Runs of every propagation, newest first: one row per Celery task of a window."""

    serializer_class = s.PropagationRunSerializer
    filterset_class = PropagationRunFilterSet
    ordering_fields = ["id", "queued_at", "started_at", "ended_at", "propagated"]

    def get_queryset(self) -> QuerySet[PropagationRun]:
        return selectors.run_list()


class WorkerViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Celery workers from their heartbeats, alive first, with the runs each holds."""

    serializer_class = s.WorkerSerializer
    # worker_list is a list of dicts, not a queryset: no FilterSet, no ordering parameter.
    filter_backends: list = []

    def get_queryset(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return selectors.worker_list()


class MaintenanceView(APIView):
    """Maintenance mode (RESTRICTED SESSION for propagations): while on, no new run starts."""

    capability = Capability.OPERATE

    @extend_schema(responses=s.MaintenanceSerializer)
    def get(self, request: Request) -> Response:
        return Response(s.MaintenanceSerializer(selectors.maintenance()).data)

    @extend_schema(request=s.MaintenanceSerializer, responses=s.MaintenanceSerializer)
    def put(self, request: Request) -> Response:
        """Turn it on or off (409 if it already is); ``reason`` is kept while it is on."""
        ser = s.MaintenanceSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        m = services.maintenance_set(
            user=request.user,
            restricted=ser.validated_data["restricted"],
            reason=ser.validated_data.get("reason", ""),
        )
        return Response(s.MaintenanceSerializer(m).data)

    # PUT's body, ``restricted`` required: drf-spectacular would document a PATCH serializer as
    # all-optional, and ``{}`` is refused (400 naming restricted).
    @extend_schema(
        request={"application/json": {"$ref": "#/components/schemas/MaintenanceRequest"}},
        responses=s.MaintenanceSerializer,
    )
    def patch(self, request: Request) -> Response:
        return self.put(request)


class TopologyView(APIView):
    """The graph: queues and foreign queues as nodes (READY depth), propagations and gateway
    jobs as edges (state, rate, backlog); sites, owner instances and gateway links as groups.
    ``?q=`` narrows it to the queues whose name contains the text and what connects to them."""

    @extend_schema(
        responses=s.TopologySerializer,
        parameters=[
            OpenApiParameter(
                "q",
                str,
                description="Only the queues whose name contains this (any case), the edges "
                "with either end among them and the queues at their other ends.",
            )
        ],
    )
    def get(self, request: Request) -> Response:
        term = request.query_params.get("q", "")[:128]
        return Response(selectors.topology_filter(selectors.topology(), term))


class AttentionView(APIView):
    """What needs an operator first: failing, stuck, behind and disabled propagations, exception
    queues holding messages, and maintenance mode."""

    @extend_schema(responses=s.AttentionSerializer)
    def get(self, request: Request) -> Response:
        return Response(s.AttentionSerializer(selectors.attention()).data)


class TraceView(APIView):
    """Where a message would go from a queue, hop by hop, and which rule decides each hop. A dry
    run: nothing is enqueued, so it needs only VIEW."""

    capability = Capability.VIEW

    @extend_schema(request=s.TraceSerializer, responses=dict)
    def post(self, request: Request) -> Response:
        ser = s.TraceSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        message, holder = selectors.trace_message(message=d.get("message"), msgid=d.get("msgid"))
        return Response(selectors.trace(queue=d.get("queue") or holder, message=message))


def _spark_shown(job: SparkJob) -> dict[str, Any]:
    """A job as retrieve shows it, re-read after a write (state, attempt, counters)."""
    return s.SparkJobDetailSerializer(selectors.spark_job_get(job.pk)).data


class SparkJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Spark bulk propagation jobs: submit, follow, cancel, re-run. Each verb is one service,
    refused with 409 when the job's state does not allow it; a job is never changed or deleted
    through the API (a re-run is a new attempt of the same job)."""

    filterset_class = SparkJobFilterSet
    ordering_fields = ["id", "submitted_at", "finished_at", "state", "read", "propagated_total"]
    lookup_value_regex = r"\d+"
    capability = Capability.OPERATE  # submit, cancel and re-run; reads need VIEW

    def get_queryset(self) -> QuerySet[SparkJob]:
        return selectors.spark_job_list()

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        if self.action == "create":
            return s.SparkJobCreateSerializer
        if self.action == "list":
            return s.SparkJobSerializer
        return s.SparkJobDetailSerializer

    @extend_schema(request=s.SparkJobCreateSerializer, responses={201: s.SparkJobDetailSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Submit a job (SUBMITTED; its Celery task is sent after commit)."""
        ser = s.SparkJobCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        job = services.spark_job_submit(user=request.user, **ser.validated_data)
        return Response(_spark_shown(job), status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=s.SparkJobDetailSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a SUBMITTED or RUNNING job (409 otherwise). One no worker took yet is
        CANCELLED at once; a running one when its task has killed the driver."""
        job = services.spark_job_cancel(user=request.user, job=self.get_object())
        return Response(_spark_shown(job))

    @extend_schema(request=None, responses=s.SparkJobDetailSerializer)
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str | None = None) -> Response:
        """Run a FAILED or CANCELLED job again as a new attempt (409 otherwise); parts an earlier
        attempt committed are skipped, never written twice."""
        job = services.spark_job_rerun(user=request.user, job=self.get_object())
        return Response(_spark_shown(job))
