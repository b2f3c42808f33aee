"""API shapes of the gateway. Serializers check input shape only; gateway.services decides and
writes. Nothing here ever returns a password or a Fernet token: passwords are write-only and
encrypted option values read ``<<ENCRYPTED>>``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import crypto
from gateway import selectors
from gateway.choices import (
    AgentPing,
    CleanupAction,
    Domain,
    LinkType,
    LogLevel,
    ShutdownMode,
)
from gateway.forms import driver_for
from gateway.models import Agent, AgentLogLine, AgentOption, ForeignQueue, Job, Link
from gateway.selectors import agent_ping, agent_placement
from gateway.services import NO_CHANGE
from gateway.tables import foreign_queue_job_names

# --- output --------------------------------------------------------------------------------------


class GatewayAgentOptionSerializer(serializers.ModelSerializer):
    value = serializers.SerializerMethodField(help_text="<<ENCRYPTED>> when encrypted.")

    class Meta:
        model = AgentOption
        fields = ["name", "value", "encrypted"]
        read_only_fields = fields

    def get_value(self, obj: AgentOption) -> str:
        return crypto.MASK if obj.encrypted else obj.value


class GatewayAgentSerializer(serializers.ModelSerializer):
    """MGW_GATEWAY's columns for one agent. ``ping`` needs the live agents, read once per
    request and passed in the context as ``live`` (a set of ids); ``placement`` the agents'
    affinity facts, as ``placements`` (gateway.selectors.agent_placements)."""

    ping = serializers.SerializerMethodField()
    log_level_name = serializers.SerializerMethodField()
    has_password = serializers.SerializerMethodField()
    link_count = serializers.IntegerField(read_only=True)
    job_count = serializers.IntegerField(read_only=True)
    options = GatewayAgentOptionSerializer(many=True, read_only=True)
    placement = serializers.SerializerMethodField(
        help_text="Where the agent runs and why (docs/INSTANCES.md): what it follows "
        "(SERVICE, OUTBOUND_JOBS or none), its owner instance, the instance that must run it "
        "now (null: any), the outbound jobs whose queue table another instance owns, warnings."
    )

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "status",
            "ping",
            "instance",
            "instance_name",
            "service",
            "placement",
            "pid",
            "start_time",
            "heartbeat_at",
            "memory_mb",
            "username",
            "has_password",
            "max_memory",
            "max_threads",
            "log_level",
            "log_level_name",
            "restart_required",
            "last_error_msg",
            "last_error_at",
            "comment",
            "link_count",
            "job_count",
            "options",
            "created",
            "updated",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=AgentPing.choices, allow_null=True))
    def get_ping(self, obj: Agent) -> str | None:
        return agent_ping(obj, live=self.context.get("live"))

    @extend_schema_field(serializers.ChoiceField(choices=LogLevel.names))
    def get_log_level_name(self, obj: Agent) -> str:
        return LogLevel(obj.log_level).label

    def get_has_password(self, obj: Agent) -> bool:
        return bool(obj.password_encrypted)

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "affinity": {"type": "string", "enum": ["SERVICE", "OUTBOUND_JOBS", ""]},
                "owner_instance": {"type": "string", "nullable": True},
                "owner_up": {"type": "boolean"},
                "run_instance": {"type": "string", "nullable": True},
                "instance": {"type": "string", "nullable": True},
                "off_owner_jobs": {"type": "array", "items": {"type": "string"}},
                "warnings": {"type": "array", "items": {"type": "string"}},
            },
        }
    )
    def get_placement(self, obj: Agent) -> dict[str, Any]:
        return asdict(agent_placement(obj, self.context.get("placements")))


class GatewayAgentLogLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = AgentLogLine
        fields = ["id", "at", "session", "level", "severity", "component", "code", "text"]
        read_only_fields = fields


def _secret_names(link_type: str) -> set[str]:
    driver = driver_for(link_type)
    specs = driver.properties if driver else {}
    return {"password"} | {n for n, spec in specs.items() if spec[1] == "secret"}


class LinkSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="name", read_only=True)
    properties = serializers.SerializerMethodField(help_text="Never the password.")
    has_password = serializers.SerializerMethodField()
    queue_count = serializers.IntegerField(read_only=True)
    job_count = serializers.IntegerField(read_only=True)
    guarantees = serializers.SerializerMethodField(
        help_text="Delivery guarantee of the link's jobs per direction, from its driver."
    )

    class Meta:
        model = Link
        fields = [
            "id",
            "name",
            "link_type",
            "agent",
            "properties",
            "has_password",
            "options",
            "max_connections",
            "outbound_log_queue",
            "comment",
            "queue_count",
            "job_count",
            "guarantees",
            "created",
            "updated",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_properties(self, obj: Link) -> dict[str, Any]:
        hidden = _secret_names(obj.link_type)
        return {k: v for k, v in obj.properties.items() if k not in hidden}

    def get_has_password(self, obj: Link) -> bool:
        return bool(obj.password_encrypted)

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_guarantees(self, obj: Link) -> dict[str, Any] | None:
        if driver_for(obj.link_type) is None:
            return None
        found = selectors.link_guarantees(obj)
        out, why = found["outbound"]
        inn, inn_why = found["inbound"]
        return {
            "outbound": {"guarantee": out, "why": why},
            "inbound": {"guarantee": inn, "why": inn_why},
            "outbound_log_queue_set": bool(obj.outbound_log_queue),
        }


class ForeignQueueSerializer(serializers.ModelSerializer):
    address = serializers.SerializerMethodField(help_text="NAME@LINK, as jobs name it.")
    link = serializers.SlugRelatedField(slug_field="name", read_only=True)
    link_type = serializers.CharField(source="link.link_type", read_only=True)
    jobs = serializers.SerializerMethodField(help_text="Jobs using it (any end).")

    class Meta:
        model = ForeignQueue
        fields = [
            "id",
            "address",
            "name",
            "link",
            "link_type",
            "provider_queue",
            "domain",
            "options",
            "comment",
            "jobs",
            "created",
            "updated",
        ]
        read_only_fields = fields

    def get_address(self, obj: ForeignQueue) -> str:
        return str(obj)

    def get_jobs(self, obj: ForeignQueue) -> list[str]:
        return foreign_queue_job_names(obj)


class JobSerializer(serializers.ModelSerializer):
    """MGW_JOBS' columns for one job."""

    source = serializers.CharField(source="source_name", read_only=True)
    destination = serializers.CharField(source="destination_name", read_only=True)
    exception_queue = serializers.CharField(source="exception_name", read_only=True)
    link = serializers.SlugRelatedField(slug_field="name", read_only=True)
    agent = serializers.CharField(source="link.agent.name", read_only=True)
    subscriber = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    max_failures = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "direction",
            "source",
            "destination",
            "exception_queue",
            "link",
            "agent",
            "status",
            "enabled",
            "propagated_msgs",
            "exceptionq_msgs",
            "failures",
            "max_failures",
            "last_error_msg",
            "last_error_at",
            "next_attempt_at",
            "last_propagated_at",
            "recovery",
            "rule",
            "transformation",
            "poll_interval",
            "options",
            "subscriber",
            "comment",
            "created",
            "updated",
        ]
        read_only_fields = fields

    def get_max_failures(self, obj: Job) -> int:
        return int(settings.MGW["MAX_FAILURES"])


# --- input ---------------------------------------------------------------------------------------


class _Changes(serializers.Serializer):
    """An ALTER: the fields given, NO_CHANGE for the others."""

    def changes(self) -> dict[str, Any]:
        return {name: self.validated_data.get(name, NO_CHANGE) for name in self.fields}


class GatewayAgentCreateSerializer(serializers.Serializer):
    """CREATE_AGENT with DBMS_MGWADM's parameter names (errors name them too)."""

    agent_name = serializers.CharField(max_length=30)
    username = serializers.CharField(required=False, allow_blank=True, max_length=128)
    password = serializers.CharField(
        required=False, allow_blank=True, write_only=True, style={"input_type": "password"}
    )
    max_memory = serializers.IntegerField(required=False, default=64)
    max_threads = serializers.IntegerField(required=False, default=1)
    service = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default="",
        help_text="A queue's service name (DBA_SERVICES.NAME): its owner instance runs the agent.",
    )
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class GatewayAgentAlterSerializer(_Changes):
    """ALTER_AGENT: absent fields stay as they are."""

    username = serializers.CharField(required=False, allow_blank=True, max_length=128)
    password = serializers.CharField(required=False, allow_blank=True, write_only=True)
    max_memory = serializers.IntegerField(required=False)
    max_threads = serializers.IntegerField(required=False)
    service = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    comment = serializers.CharField(required=False, allow_blank=True)


class ShutdownSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=ShutdownMode.choices, default=ShutdownMode.NORMAL)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "enum": LogLevel.names},
            {"type": "integer", "enum": LogLevel.values},
        ]
    }
)
class LogLevelField(serializers.Field):
    """A log level by its Oracle name or its number, exactly as the schema says."""

    def to_internal_value(self, data: Any) -> Any:
        exact = (isinstance(data, str) and data in LogLevel.names) or (
            isinstance(data, int) and not isinstance(data, bool) and data in LogLevel.values
        )
        if not exact:
            names = ", ".join(f"{lv.name} ({lv.value})" for lv in LogLevel)
            raise serializers.ValidationError(f"log_level must be one of {names}.")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class LogLevelSerializer(serializers.Serializer):
    log_level = LogLevelField(
        help_text="BASIC_LOGGING (0), TRACE_LITE_LOGGING (1), TRACE_HIGH_LOGGING (2), "
        "TRACE_DEBUG_LOGGING (3) or TRACE_DEBUG_HIGH_LOGGING (4), by name or number."
    )


class CleanupSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=CleanupAction.choices)
    sarg = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="The job, for RESET_SUB_*."
    )


class GatewayAgentOptionSetSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    value = serializers.CharField(allow_blank=True, write_only=True)
    encrypted = serializers.BooleanField(default=False)


class OptionNameSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)


class LinkOptionSetSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    value = serializers.CharField(allow_blank=True)


class LinkCreateSerializer(serializers.Serializer):
    """CREATE_MSGSYSTEM_LINK with DBMS_MGWADM's parameter names (errors name them too)."""

    linkname = serializers.CharField(max_length=30)
    link_type = serializers.ChoiceField(choices=LinkType.choices)
    agent = serializers.SlugRelatedField(
        slug_field="name", queryset=Agent.objects.all(), required=False, allow_null=True
    )
    properties = serializers.DictField(help_text="The type's properties (see its driver).")
    password = serializers.CharField(required=False, allow_blank=True, write_only=True, default="")
    options = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    max_connections = serializers.IntegerField(required=False, default=1)
    outbound_log_queue = serializers.CharField(required=False, allow_blank=True, default="")
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class LinkAlterSerializer(_Changes):
    """ALTER_MSGSYSTEM_LINK: given properties are merged over the current ones; agent, type,
    and the host and port properties are fixed (a different value is a 400 naming it); a
    ``password`` inside ``properties`` is the link's password."""

    properties = serializers.DictField(required=False)
    password = serializers.CharField(required=False, allow_blank=True, write_only=True)
    options = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    max_connections = serializers.IntegerField(required=False)
    outbound_log_queue = serializers.CharField(required=False, allow_blank=True)
    comment = serializers.CharField(required=False, allow_blank=True)

    def __init__(self, *args: Any, link: Link | None = None, **kwargs: Any) -> None:
        self.link = link  # None only when the schema generator builds one
        super().__init__(*args, **kwargs)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = self.initial_data
        if self.link is None:
            return attrs
        fixed = {"agent": self.link.agent.name, "link_type": self.link.link_type}
        for name, current in fixed.items():
            if name in given and str(given[name]).upper() != current.upper():
                raise serializers.ValidationError(
                    {name: [f"A link's {name} is fixed at creation ({current})."]}
                )
        return attrs


class ForeignQueueRegisterSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=30)
    link = serializers.SlugRelatedField(slug_field="name", queryset=Link.objects.all())
    provider_queue = serializers.CharField(required=False, allow_blank=True, default="")
    domain = serializers.ChoiceField(choices=Domain.choices, default=Domain.QUEUE)
    options = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class JobCreateSerializer(serializers.Serializer):
    """CREATE_JOB with DBMS_MGWADM's parameter names."""

    job_name = serializers.CharField(max_length=30)
    # Plain text (the service checks it and names it): an enum here would be a second name for
    # the JobSerializer.direction choice set in the schema.
    propagation_type = serializers.CharField(help_text="OUTBOUND or INBOUND.")
    source = serializers.CharField(help_text="OUTBOUND: our queue; INBOUND: NAME@LINK.")
    destination = serializers.CharField(help_text="OUTBOUND: NAME@LINK; INBOUND: our queue.")
    rule = serializers.CharField(required=False, allow_blank=True, default="")
    transformation = serializers.CharField(required=False, allow_blank=True, default="")
    exception_queue = serializers.CharField(required=False, allow_blank=True, default="")
    poll_interval = serializers.FloatField(required=False, allow_null=True, default=None)
    options = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    enabled = serializers.BooleanField(default=True)
    comments = serializers.CharField(required=False, allow_blank=True, default="")


class JobAlterSerializer(_Changes):
    """ALTER_JOB: absent fields stay (NO_CHANGE); "" clears rule, transformation or exception
    queue; poll_interval null resets it to the default; options merge (null removes one)."""

    rule = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    transformation = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    exception_queue = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    poll_interval = serializers.FloatField(required=False, allow_null=True)
    options = serializers.DictField(
        child=serializers.CharField(allow_blank=True, allow_null=True), required=False
    )
    comments = serializers.CharField(required=False, allow_blank=True)

    def changes(self) -> dict[str, Any]:
        out = super().changes()
        # The service's "keep" for the poll interval is 0, not NO_CHANGE.
        if out["poll_interval"] is NO_CHANGE:
            out["poll_interval"] = 0
        return out


class JobRemoveSerializer(serializers.Serializer):
    force = serializers.BooleanField(default=False)


class LinkTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    detail = serializers.CharField(help_text="The server's description, or why it failed.")
