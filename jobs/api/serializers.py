"""API shapes of the jobs app. Serializers validate input shape only; the services decide and
write, and the selectors' annotations (state, backlog, rate) are what the lists show."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Model, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import JSONField
from core.lookups import name_or_id_q
from core.validators import MAX_SECONDS, PG_INT_MAX, name_validator
from jobs import selectors
from jobs.choices import ScheduleState, SparkJobPhase, SparkJobState, SparkMode, SparkSelection
from jobs.models import (
    Maintenance,
    Propagation,
    PropagationRun,
    PropagationSchedule,
    SparkJob,
    SparkJobDestination,
    SparkJobPart,
)
from queues.models import Queue
from rules.models import RuleSet

# Hard ceilings so an absurd number is a 400 naming the field, not an overflow deeper down.
LAST_YEAR = 9000


@extend_schema_field(OpenApiTypes.STR)
class NameOrIdRelatedField(serializers.RelatedField):
    """A reference by id (``12``, ``"12"``) or by case-insensitive name (``"ORDERS"``), answered
    with the name, as the rest of the API names related objects."""

    default_error_messages = {
        "does_not_exist": "No {kind} named or numbered {value}.",
        "invalid": "Give a name or an id.",
    }

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        self.kind = kind
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Model:
        qs: QuerySet = self.get_queryset()
        if isinstance(data, bool) or not isinstance(data, int | str) or str(data).strip() == "":
            self.fail("invalid")
        key = str(data).strip()
        if (where := name_or_id_q(key)) is None:
            self.fail("invalid")
        found = qs.filter(where).first()
        if found is None:
            self.fail("does_not_exist", kind=self.kind, value=key)
        return found

    def to_representation(self, value: Model) -> str:
        return value.name  # type: ignore[attr-defined]


def _queue_field(**kwargs: Any) -> NameOrIdRelatedField:
    return NameOrIdRelatedField(kind="queue", queryset=Queue.objects.all(), **kwargs)


@extend_schema_field(OpenApiTypes.STR)
class DestinationQueueField(NameOrIdRelatedField):
    """A local queue by name or id, or ``QUEUE@LINK``: a queue at the site of a database link
    (kept as text; the service asks the remote whether the queue exists)."""

    def to_internal_value(self, data: Any) -> Model | str:  # type: ignore[override]
        if isinstance(data, str) and "@" in data:
            if "\x00" in data or len(data) > 260:
                self.fail("invalid")
            return data.strip()
        return super().to_internal_value(data)


def _rule_set_field(**kwargs: Any) -> NameOrIdRelatedField:
    return NameOrIdRelatedField(
        kind="rule set", queryset=RuleSet.objects.all(), required=False, allow_null=True, **kwargs
    )


# --- output --------------------------------------------------------------------------------------


class ScheduleSerializer(serializers.ModelSerializer):
    """SCHEDULE_PROPAGATION's parameters, and what the dispatcher and the runs keep up to date."""

    class Meta:
        model = PropagationSchedule
        fields = [
            "start_time",
            "duration",
            "next_time",
            "latency",
            "enabled",
            "max_failures",
            "failures",
            "last_error_msg",
            "last_error_at",
            "next_run_at",
            "window_start",
            "window_end",
            "last_run_at",
            "total_runs",
            "total_number",
            "total_bytes",
            "total_time",
            "total_discarded",
            "total_exceptions",
            "max_number",
            "max_bytes",
            "elapsed_dequeue_time",
            "elapsed_rule_time",
            "elapsed_enqueue_time",
        ]
        read_only_fields = fields


class PropagationRunSerializer(serializers.ModelSerializer):
    """One Celery task's stay in a window. Its propagation must be loaded with it
    (selectors.run_list select_related it; a propagation's current run gets its parent)."""

    propagation = serializers.SlugRelatedField(slug_field="name", read_only=True)
    propagation_id = serializers.IntegerField(read_only=True)
    elapsed = serializers.FloatField(read_only=True, allow_null=True)
    stuck = serializers.SerializerMethodField()

    class Meta:
        model = PropagationRun
        fields = [
            "id",
            "propagation",
            "propagation_id",
            "state",
            "end_reason",
            "task_id",
            "worker",
            "pid",
            "session_id",
            "queued_at",
            "started_at",
            "heartbeat_at",
            "ended_at",
            "elapsed",
            "stuck",
            "waiting",
            "batches",
            "messages",
            "propagated",
            "bytes",
            "discarded",
            "exceptions",
            "dequeue_time",
            "rule_time",
            "enqueue_time",
            "error",
        ]
        read_only_fields = fields

    def get_stuck(self, obj: PropagationRun) -> bool:
        return selectors.run_is_stuck(obj)


class PropagationSerializer(serializers.ModelSerializer):
    """A propagation with its live state (selectors.propagation_list's annotations), its
    schedule (null when unscheduled) and the run holding its window right now (or null)."""

    source_queue = serializers.SlugRelatedField(slug_field="name", read_only=True)
    destination_queue = serializers.CharField(
        source="destination_queue_name",
        read_only=True,
        help_text="The destination queue's name; a queue at the site of destination_dblink when "
        "that is set.",
    )
    destination = serializers.CharField(read_only=True, help_text="QUEUE, or QUEUE@LINK.")
    positive_rule_set = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    negative_rule_set = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    state = serializers.ChoiceField(choices=ScheduleState.choices, read_only=True)
    backlog = serializers.IntegerField(
        read_only=True, help_text="Messages the source queue still keeps for this propagation."
    )
    oldest_backlog = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="Enqueue time of the oldest of them."
    )
    rate = serializers.FloatField(
        read_only=True, help_text="Messages per second propagated by the latest run."
    )
    schedule = ScheduleSerializer(read_only=True, allow_null=True)
    run = serializers.SerializerMethodField(help_text="The run holding the window now.")

    class Meta:
        model = Propagation
        fields = [
            "id",
            "name",
            "source_queue",
            "destination_queue",
            "destination_dblink",
            "destination",
            "positive_rule_set",
            "negative_rule_set",
            "queue_to_queue",
            "enabled",
            "comment",
            "state",
            "backlog",
            "oldest_backlog",
            "rate",
            "schedule",
            "run",
            "created",
            "updated",
        ]
        read_only_fields = fields

    @extend_schema_field(PropagationRunSerializer(allow_null=True))
    def get_run(self, obj: Propagation) -> dict[str, Any] | None:
        schedule = getattr(obj, "schedule", None)
        run = schedule.run if schedule is not None else None
        if run is None:
            return None
        run.propagation = obj  # already loaded: no query per row for its name
        return PropagationRunSerializer(run).data


class PropagationShownSerializer(PropagationSerializer):
    """One propagation as a write or a read of it answers: with what is legal but likely not
    meant (an empty positive rule set, which discards every message)."""

    warnings = serializers.SerializerMethodField()

    class Meta(PropagationSerializer.Meta):
        fields = [*PropagationSerializer.Meta.fields, "warnings"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_warnings(self, obj: Propagation) -> list[str]:
        from jobs.selectors import propagation_warnings

        return propagation_warnings(obj)


# --- input ---------------------------------------------------------------------------------------


class ScheduleParamsSerializer(serializers.Serializer):
    """SCHEDULE_PROPAGATION / ALTER_PROPAGATION_SCHEDULE parameters; omitted ones keep their
    default (schedule) or current value (alter)."""

    start_time = serializers.DateTimeField(required=False, help_text="Default: now.")
    duration = serializers.FloatField(
        required=False,
        allow_null=True,
        max_value=MAX_SECONDS,
        help_text="Window length in seconds; null: the window never ends.",
    )
    next_time = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Interval (90s, 10m, PT10M, SYSDATE + 1/24) or cron expression; blank: at once.",
    )
    latency = serializers.FloatField(required=False, max_value=MAX_SECONDS, help_text="Seconds.")
    max_failures = serializers.IntegerField(required=False, max_value=PG_INT_MAX)

    def validate_start_time(self, value: datetime) -> datetime:
        # Windows are start + n * period; near year 9999 that overflows the datetime type.
        if value.year > LAST_YEAR:
            raise serializers.ValidationError(f"Give a start time before the year {LAST_YEAR}.")
        return value


class PropagationCreateSerializer(ScheduleParamsSerializer):
    """CREATE_PROPAGATION, and (unless ``schedule`` is false) SCHEDULE_PROPAGATION with the
    given parameters."""

    name = serializers.CharField(max_length=128, validators=[name_validator])
    source_queue = _queue_field(help_text="Name or id of a queue in a multi-consumer table.")
    destination_queue = DestinationQueueField(
        kind="queue",
        queryset=Queue.objects.all(),
        help_text="Name or id of a local queue, or QUEUE@LINK: a queue at the site of database "
        "link LINK (remote queue-to-queue propagation).",
    )
    positive_rule_set = _rule_set_field(help_text="Name or id; null: every message.")
    negative_rule_set = _rule_set_field(help_text="Name or id; null: none.")
    queue_to_queue = serializers.BooleanField(default=True)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=4000)
    schedule = serializers.BooleanField(
        default=True, help_text="False: create the propagation unscheduled."
    )

    SCHEDULE_FIELDS = ("start_time", "duration", "next_time", "latency", "max_failures")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [f for f in self.SCHEDULE_FIELDS if f in attrs]
        if not attrs["schedule"] and given:
            raise serializers.ValidationError(
                {given[0]: ["Schedule parameters need schedule=true."]}
            )
        return attrs


class PropagationUpdateSerializer(serializers.Serializer):
    """Rule sets and comment can change. The fixed properties are accepted so the service can
    refuse a change to them by name, rather than the API ignoring them and answering 200."""

    positive_rule_set = _rule_set_field()
    negative_rule_set = _rule_set_field()
    comment = serializers.CharField(required=False, allow_blank=True, max_length=4000)
    name = serializers.CharField(required=False, max_length=128)
    source_queue = _queue_field(required=False)
    # As GET shows it: a local queue's name (or id), or a remote queue's name beside
    # destination_dblink (or QUEUE@LINK). Compared, never looked up: it cannot change.
    destination_queue = serializers.CharField(required=False, max_length=300)
    destination_dblink = serializers.CharField(required=False, allow_blank=True, max_length=128)
    queue_to_queue = serializers.BooleanField(required=False)

    FIXED = ("name", "source_queue", "queue_to_queue")

    def changes(self, propagation: Propagation) -> dict[str, Any]:
        """The validated fields, less fixed ones sent back unchanged (a client PATCHing what it
        just read is not asking to move the propagation). A changed destination stays, as
        ``destination_queue``, for the service to refuse by that name."""
        out = dict(self.validated_data)
        for key in self.FIXED:
            if key in out and out[key] == getattr(propagation, key):
                del out[key]
        dest = out.pop("destination_queue", None)
        link = out.pop("destination_dblink", None)
        if (dest is not None or link is not None) and not same_destination(propagation, dest, link):
            out["destination_queue"] = dest if dest is not None else f"@{link}"
        return out


def same_destination(p: Propagation, queue: str | None, link: str | None) -> bool:
    """Whether (``queue``, ``link``), as a client echoes GET's destination_queue and
    destination_dblink, names ``p``'s destination (names are case-insensitive)."""
    queue = (queue or "").strip()
    link = (link if link is not None else p.destination_dblink).strip()
    if link.upper() == "LOCAL":
        link = ""
    if "@" in queue:  # QUEUE@LINK
        queue, _, at = queue.partition("@")
        if link and at.strip().upper() != link.upper():
            return False
        link = at.strip()
    if link.upper() != p.destination_dblink.upper():
        return False
    if not queue:
        return True
    if p.is_remote:
        return queue.upper() == p.destination_remote_queue.upper()
    dq = p.destination_queue
    return dq is not None and (queue.upper() == dq.name.upper() or queue == str(dq.pk))


class MaintenanceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Maintenance
        fields = ["restricted", "since", "by", "reason"]
        read_only_fields = ["since", "by"]
        extra_kwargs = {
            "restricted": {"required": True},
            "reason": {"required": False, "allow_blank": True, "max_length": 4000},
        }


# --- workers -------------------------------------------------------------------------------------


class WorkerRunSerializer(serializers.ModelSerializer):
    propagation = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = PropagationRun
        fields = ["id", "propagation", "started_at", "heartbeat_at", "waiting", "propagated"]
        read_only_fields = fields


class WorkerSerializer(serializers.Serializer):
    """A Celery worker from its own heartbeats (selectors.worker_list)."""

    hostname = serializers.CharField(source="worker.hostname")
    pid = serializers.IntegerField(source="worker.pid")
    instance = serializers.CharField(
        source="worker.instance", help_text="Its instance (AQ_INSTANCE_NAME)."
    )
    alive = serializers.BooleanField()
    queues = serializers.ListField(child=serializers.CharField(), source="worker.queues")
    pool = serializers.CharField(source="worker.pool")
    concurrency = serializers.IntegerField(source="worker.concurrency")
    active = serializers.ListField(
        child=serializers.DictField(), source="worker.active", help_text="Tasks running now."
    )
    processed = serializers.IntegerField(source="worker.processed")
    started_at = serializers.DateTimeField(source="worker.started_at")
    last_seen = serializers.DateTimeField(source="worker.last_seen")
    stopped_at = serializers.DateTimeField(source="worker.stopped_at", allow_null=True)
    runs = WorkerRunSerializer(many=True, help_text="Propagation runs it holds right now.")


# --- dashboard, graph, trace ---------------------------------------------------------------------


class PropagationBriefSerializer(serializers.Serializer):
    """A propagation in the attention list: enough to say what is wrong and where to look."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    # Plain text: the enum is documented once, on Propagation (one component per choice set).
    state = serializers.CharField(help_text="As Propagation.state.")
    source_queue = serializers.CharField(source="source_queue.name")
    destination_queue = serializers.CharField(
        source="destination", help_text="QUEUE or QUEUE@LINK."
    )
    backlog = serializers.IntegerField()
    failures = serializers.SerializerMethodField()
    last_error_msg = serializers.SerializerMethodField()
    last_error_at = serializers.SerializerMethodField()

    @staticmethod
    def _schedule(obj: Propagation) -> PropagationSchedule | None:
        return getattr(obj, "schedule", None)

    def get_failures(self, obj: Propagation) -> int:
        s = self._schedule(obj)
        return s.failures if s is not None else 0

    def get_last_error_msg(self, obj: Propagation) -> str:
        s = self._schedule(obj)
        return s.last_error_msg if s is not None else ""

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_last_error_at(self, obj: Propagation) -> str | None:
        s = self._schedule(obj)
        if s is None or s.last_error_at is None:
            return None
        return serializers.DateTimeField().to_representation(s.last_error_at)


class BehindSerializer(serializers.Serializer):
    propagation = PropagationBriefSerializer()
    age = serializers.FloatField(help_text="Seconds the oldest kept message has waited.")


class HeldQueueSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    held = serializers.IntegerField(help_text="Expired messages it holds.")


class AttentionSerializer(serializers.Serializer):
    """The dashboard's "needs attention" list (selectors.attention)."""

    maintenance = MaintenanceSerializer()
    failing = PropagationBriefSerializer(many=True)
    stuck = PropagationBriefSerializer(many=True)
    behind = BehindSerializer(many=True)
    disabled = PropagationBriefSerializer(many=True)
    exception_queues = HeldQueueSerializer(many=True)
    total = serializers.IntegerField(help_text="Propagations in all.")


class TopologyNodeSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField(help_text="A queue here, or QUEUE@LINK at a linked site.")
    depth = serializers.IntegerField(
        allow_null=True, help_text="READY messages; null for a remote queue not read."
    )
    table = serializers.CharField()
    kind = serializers.CharField(
        help_text="NORMAL_QUEUE, EXCEPTION_QUEUE, REMOTE (QUEUE@LINK at a linked site) or "
        "FOREIGN (a gateway foreign queue NAME@LINK)."
    )
    url = serializers.CharField(allow_blank=True)
    site = serializers.CharField(required=False, help_text="Its site's global name.")
    parent = serializers.CharField(
        required=False, help_text="Its group's id: a site, an instance or a gateway link."
    )
    queue = serializers.CharField(required=False, help_text="A remote queue's own name.")
    instance = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="A queue here: its queue table's owner instance (blank: none up).",
    )
    link = serializers.CharField(required=False, help_text="A foreign queue's gateway link.")
    link_type = serializers.CharField(required=False, help_text="AMQP, MQTT, NATS or REDIS.")
    provider_queue = serializers.CharField(
        required=False, help_text="A foreign queue's name in its system."
    )


class TopologyEdgeSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=["propagation", "gateway_job"],
        help_text="A propagation, or a gateway job between a queue and a foreign queue.",
    )
    name = serializers.CharField()
    source = serializers.CharField()
    target = serializers.CharField()
    state = serializers.CharField(
        help_text="A propagation's schedule state, or a gateway job's status (READY, RETRY, "
        "FAILED, DELETE_PENDING)."
    )
    colour = serializers.CharField()
    rate = serializers.FloatField()
    backlog = serializers.IntegerField()
    url = serializers.CharField(help_text="Empty for a propagation defined at another site.")
    remote = serializers.BooleanField(help_text="Its destination is QUEUE@LINK.")
    dblink = serializers.CharField(allow_blank=True)
    destination = serializers.CharField()
    cycle = serializers.BooleanField(help_text="On a directed cycle (A -> B -> A).")
    site = serializers.CharField(required=False, help_text="Where it is defined.")
    read_through = serializers.CharField(
        required=False, help_text="The link here through which another site's edge was read."
    )
    direction = serializers.CharField(required=False, help_text="A job's OUTBOUND or INBOUND.")
    enabled = serializers.BooleanField(required=False, help_text="A job's enabled flag.")
    link = serializers.CharField(required=False, help_text="A job's gateway link.")


class TopologySiteSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(help_text="site")
    global_name = serializers.CharField()
    local = serializers.BooleanField()
    links = serializers.ListField(child=serializers.CharField())
    reachable = serializers.BooleanField(
        allow_null=True, help_text="null: not read (nothing here reaches it)."
    )
    error = serializers.CharField(allow_blank=True)


class TopologyInstanceSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(help_text="instance")
    name = serializers.CharField()
    inst_id = serializers.IntegerField()
    status = serializers.CharField(help_text="UP or DOWN.")
    site = serializers.CharField(allow_blank=True, help_text="This site's global name, if sites.")
    parent = serializers.CharField(required=False, help_text="This site's group, if sites.")


class TopologyGatewayLinkSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(help_text="gateway_link")
    name = serializers.CharField()
    link_type = serializers.CharField(help_text="AMQP, MQTT, NATS or REDIS.")
    system = serializers.CharField(help_text="RabbitMQ, MQTT, NATS or Redis.")
    agent = serializers.CharField()
    url = serializers.CharField()


class TopologyCycleSerializer(serializers.Serializer):
    nodes = serializers.ListField(child=serializers.CharField())
    edges = serializers.ListField(child=serializers.CharField())
    sites = serializers.ListField(child=serializers.CharField())


class TopologySerializer(serializers.Serializer):
    """Queues and foreign queues as nodes, propagations and gateway jobs as edges, sites,
    owner instances and gateway links as groups (selectors.topology)."""

    nodes = TopologyNodeSerializer(many=True)
    edges = TopologyEdgeSerializer(many=True)
    sites = TopologySiteSerializer(many=True, help_text="Empty when there are no links.")
    instances = TopologyInstanceSerializer(
        many=True, help_text="Owner instances of the queues drawn; empty with one instance."
    )
    gateway_links = TopologyGatewayLinkSerializer(
        many=True, help_text="Gateway links, groups of their foreign queues."
    )
    cycles = TopologyCycleSerializer(many=True)


class TraceSerializer(serializers.Serializer):
    """A pasted rules message, or the id of a queued message, to follow from a queue."""

    queue = _queue_field(
        required=False, help_text="Name or id; defaults to the queue holding msgid."
    )
    message = JSONField(
        required=False,
        help_text='{"kind": "row_lcr" | "ddl_lcr" | "user", …} (fields of spec/rules.md §7.1).',
    )
    msgid = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("message" in attrs) == ("msgid" in attrs):
            raise serializers.ValidationError(
                {"message": ["Give either a message or the msgid of a queued message."]}
            )
        if "msgid" not in attrs and "queue" not in attrs:
            raise serializers.ValidationError({"queue": ["Say which queue the message is in."]})
        return attrs


# --- Spark bulk propagation jobs -----------------------------------------------------------------


class SparkJobDestinationSerializer(serializers.ModelSerializer):
    # Names as submitted: a job outlives the queues and propagations it named.
    queue = serializers.CharField(source="queue_name", read_only=True)
    propagation = serializers.CharField(source="propagation_name", read_only=True, allow_blank=True)

    class Meta:
        model = SparkJobDestination
        fields = ["queue", "propagation", "position"]
        read_only_fields = fields


class SparkJobPartSerializer(serializers.ModelSerializer):
    propagated = serializers.DictField(
        child=serializers.IntegerField(), help_text="Messages written per destination queue name."
    )

    class Meta:
        model = SparkJobPart
        fields = [
            "part_no",
            "attempt",
            "read",
            "discarded",
            "exceptions",
            "gone",
            "errors",
            "propagated",
            "done_at",
        ]
        read_only_fields = fields


class SparkJobSerializer(serializers.ModelSerializer):
    """A Spark job as the lists show it: its definition, state, progress and the counters summed
    from its committed parts (selectors.spark_job_list's annotations)."""

    source_queue = serializers.CharField(source="source_name", read_only=True)
    destinations = SparkJobDestinationSerializer(many=True, read_only=True)
    state = serializers.ChoiceField(choices=SparkJobState.choices, read_only=True)
    phase = serializers.ChoiceField(
        choices=SparkJobPhase.choices,
        read_only=True,
        help_text=(
            "Where the job is: QUEUED (task waiting for a worker), STARTING (Spark starting, no "
            "stage yet), READING, WRITING, then its finished state."
        ),
    )
    phase_at = serializers.DictField(
        child=serializers.CharField(),
        read_only=True,
        help_text="When this attempt entered each phase it went through (ISO times).",
    )
    read = serializers.IntegerField(read_only=True, help_text="Source messages read.")
    discarded = serializers.IntegerField(read_only=True, help_text="Discarded by rule sets.")
    exceptions = serializers.IntegerField(
        read_only=True, help_text="Copies sent to an exception queue."
    )
    gone = serializers.IntegerField(
        read_only=True, help_text="Dequeued by someone else between read and write."
    )
    propagated_total = serializers.IntegerField(
        read_only=True, help_text="Messages written, all destinations together."
    )
    duration = serializers.FloatField(read_only=True, allow_null=True, help_text="Seconds.")

    class Meta:
        model = SparkJob
        fields = [
            "id",
            "name",
            "source_queue",
            "destinations",
            "selection",
            "enq_time_from",
            "enq_time_to",
            "correlation",
            "condition",
            "mode",
            "dry_run",
            "master",
            "executors",
            "executor_cores",
            "executor_memory",
            "state",
            "phase",
            "phase_at",
            "cancel_requested",
            "attempt",
            "app_id",
            "tasks_done",
            "tasks_total",
            "read",
            "discarded",
            "exceptions",
            "gone",
            "propagated_total",
            "worker",
            "submitted_by",
            "submitted_at",
            "started_at",
            "finished_at",
            "heartbeat_at",
            "duration",
            "error",
            "dry_run_result",
        ]
        read_only_fields = fields


class SparkJobDetailSerializer(SparkJobSerializer):
    """One Spark job: everything the list shows, propagated per destination, its parts, the
    frozen spec and the tail of the driver log."""

    propagated = serializers.SerializerMethodField(
        help_text="Messages written per destination queue name (committed parts)."
    )
    parts = serializers.SerializerMethodField()

    class Meta(SparkJobSerializer.Meta):
        fields = [
            *SparkJobSerializer.Meta.fields,
            "propagated",
            "parts",
            "spec",
            "celery_task_id",
            "pid",
            "driver_log_tail",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.IntegerField()))
    def get_propagated(self, obj: SparkJob) -> dict[str, int]:
        return selectors.spark_job_counters(obj)["propagated"]

    @extend_schema_field(SparkJobPartSerializer(many=True))
    def get_parts(self, obj: SparkJob) -> list[dict[str, Any]]:
        return SparkJobPartSerializer(selectors.spark_job_parts(obj), many=True).data


class SparkJobCreateSerializer(serializers.Serializer):
    """A bulk propagation job. Shape only: jobs.services.spark_job_submit checks the meaning
    (destinations, selection, master, sizes) and names the field at fault."""

    name = serializers.CharField(required=False, allow_blank=True, max_length=128, default="")
    source_queue = _queue_field(help_text="Name or id.")
    destinations = serializers.ListField(
        child=_queue_field(),
        required=False,
        default=list,
        help_text="Names or ids of queues that get the messages as they are.",
    )
    propagations = serializers.ListField(
        child=NameOrIdRelatedField(
            kind="propagation",
            queryset=Propagation.objects.select_related("source_queue", "destination_queue"),
        ),
        required=False,
        default=list,
        help_text="Names or ids of propagations out of the source: their rule sets and "
        "transformations decide what their destination gets.",
    )
    selection = serializers.ChoiceField(
        choices=SparkSelection.choices, default=SparkSelection.ALL_READY
    )
    enq_time_from = serializers.DateTimeField(required=False, allow_null=True, default=None)
    enq_time_to = serializers.DateTimeField(required=False, allow_null=True, default=None)
    correlation = serializers.CharField(
        required=False, allow_blank=True, max_length=128, default=""
    )
    condition = serializers.CharField(
        required=False, allow_blank=True, max_length=20_000, default="", trim_whitespace=False
    )
    mode = serializers.ChoiceField(choices=SparkMode.choices, default=SparkMode.COPY)
    dry_run = serializers.BooleanField(default=False)
    master = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        default="",
        help_text="local, local[N], local[*] or spark://HOST:PORT; blank: SPARK_MASTER.",
    )
    executors = serializers.IntegerField(default=1, max_value=PG_INT_MAX)
    executor_cores = serializers.IntegerField(default=1, max_value=PG_INT_MAX)
    executor_memory = serializers.CharField(default="1g", max_length=16, help_text="512m, 2g, …")
