"""One TextChoices per MGW enumeration (spec/gateway.md §1.6.6, §1.7, §1.8, §1.9, §1.12, §2.1);
model fields, filters, serializers and badges all read these."""

from __future__ import annotations

from django.db import models

from core.storable import is_ascii_id


class AgentStatus(models.TextChoices):
    NOT_STARTED = "NOT_STARTED", "Not started"
    START_SCHEDULED = "START_SCHEDULED", "Start scheduled"
    STARTING = "STARTING", "Starting"
    INITIALIZING = "INITIALIZING", "Initializing"
    RUNNING = "RUNNING", "Running"
    SHUTTING_DOWN = "SHUTTING_DOWN", "Shutting down"
    BROKEN = "BROKEN", "Broken"


# States in which an agent process is supposed to exist (and so can be pinged).
AGENT_LIVE_STATES = (
    AgentStatus.STARTING,
    AgentStatus.INITIALIZING,
    AgentStatus.RUNNING,
    AgentStatus.SHUTTING_DOWN,
)


class AgentPing(models.TextChoices):
    REACHABLE = "REACHABLE", "Reachable"
    UNREACHABLE = "UNREACHABLE", "Unreachable"


class ShutdownMode(models.TextChoices):
    NORMAL = "NORMAL", "Normal"  # finish the batches in flight
    IMMEDIATE = "IMMEDIATE", "Immediate"  # roll back the batches in flight


class LogLevel(models.IntegerChoices):
    """DBMS_MGWADM's log levels 0 to 4 under their Oracle names (spec §1.5, §2.1)."""

    BASIC_LOGGING = 0, "BASIC_LOGGING"
    TRACE_LITE_LOGGING = 1, "TRACE_LITE_LOGGING"
    TRACE_HIGH_LOGGING = 2, "TRACE_HIGH_LOGGING"
    TRACE_DEBUG_LOGGING = 3, "TRACE_DEBUG_LOGGING"
    TRACE_DEBUG_HIGH_LOGGING = 4, "TRACE_DEBUG_HIGH_LOGGING"

    @classmethod
    def parse(cls, value: object) -> LogLevel | None:
        """A level from its number (0-4, or its digits) or its Oracle name; None otherwise."""
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return cls(value) if value in cls.values else None
        if isinstance(value, str):
            text = value.strip().upper()
            if text in cls.names:
                return cls[text]
            if is_ascii_id(text) and int(text) in cls.values:  # bounded: int() refuses 4,301
                return cls(int(text))
        return None


class LinkType(models.TextChoices):
    AMQP = "AMQP", "AMQP 0-9-1 (RabbitMQ)"
    MQTT = "MQTT", "MQTT 3.1.1 / 5"
    NATS = "NATS", "NATS JetStream"
    REDIS = "REDIS", "Redis Streams"


# The foreign system each link type reaches, as the topology graph names it.
LINK_SYSTEMS = {
    LinkType.AMQP: "RabbitMQ",
    LinkType.MQTT: "MQTT",
    LinkType.NATS: "NATS",
    LinkType.REDIS: "Redis",
}


class Domain(models.TextChoices):
    QUEUE = "QUEUE", "Queue"
    TOPIC = "TOPIC", "Topic"


class Direction(models.TextChoices):
    OUTBOUND = "OUTBOUND", "Outbound (our queue → foreign queue)"
    INBOUND = "INBOUND", "Inbound (foreign queue → our queue)"


class JobStatus(models.TextChoices):
    READY = "READY", "Ready"
    RETRY = "RETRY", "Retry"
    FAILED = "FAILED", "Failed"
    DELETE_PENDING = "DELETE_PENDING", "Delete pending"


class Recovery(models.TextChoices):
    """What a job's recovery found (spec §1.11); cleared by the matching CLEANUP_GATEWAY action."""

    NONE = "", "None"
    MISSING_MESSAGE = "MISSING_MESSAGE", "[415] missing source message"
    # Our recovery reads the outbound log (the inbound one, [416], is our own receive log).
    MISSING_LOG_RECORD = "MISSING_LOG_RECORD", "[417] missing outbound log record"


class CleanupAction(models.TextChoices):
    CLEAN_STARTUP_STATE = "CLEAN_STARTUP_STATE", "Clean startup state"
    CLEAN_LOG_QUEUES = "CLEAN_LOG_QUEUES", "Clean log queues"
    RESET_SUB_MISSING_LOG_REC = "RESET_SUB_MISSING_LOG_REC", "Reset missing log record"
    RESET_SUB_MISSING_MESSAGE = "RESET_SUB_MISSING_MESSAGE", "Reset missing message"


class OptionType(models.TextChoices):
    """SET_OPTION's target types (§2.1)."""

    AGENT_JAVA_PROP = "AGENT_JAVA_PROP", "Agent property"
    MSGLINK_OPTION = "MSGLINK_OPTION", "Link option"
    JOB_OPTION = "JOB_OPTION", "Job option"


BADGE = {
    AgentStatus.NOT_STARTED: "secondary",
    AgentStatus.START_SCHEDULED: "info",
    AgentStatus.STARTING: "info",
    AgentStatus.INITIALIZING: "info",
    AgentStatus.RUNNING: "success",
    AgentStatus.SHUTTING_DOWN: "warning",
    AgentStatus.BROKEN: "danger",
    JobStatus.READY: "success",
    JobStatus.RETRY: "warning",
    JobStatus.FAILED: "danger",
    JobStatus.DELETE_PENDING: "dark",
    AgentPing.REACHABLE: "success",
    AgentPing.UNREACHABLE: "danger",
}
