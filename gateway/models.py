"""The Messaging Gateway's configuration and run-time state (spec/gateway.md §5.1).

Oracle keeps these in SYS tables behind the MGW_* views; here they are Django models, and the
views of migration 0003 show them under MGW's names and columns. Secrets (passwords, encrypted
options) are stored as Fernet tokens (core/crypto.py) and never shown.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import F, Q

from core.validators import name_validator
from gateway.choices import (
    AgentStatus,
    Direction,
    Domain,
    JobStatus,
    LinkType,
    LogLevel,
    Recovery,
    ShutdownMode,
)

DEFAULT_AGENT = "DEFAULT_AGENT"


class Agent(models.Model):
    name = models.CharField(max_length=30, unique=True, validators=[name_validator])
    # The agent user: the PostgreSQL role the agent connects as. STARTUP needs one (§2.3).
    username = models.CharField(max_length=128, blank=True)
    password_encrypted = models.TextField(blank=True)
    max_memory = models.PositiveIntegerField(default=64, help_text="MB; checked, not enforced.")
    max_threads = models.PositiveSmallIntegerField(default=1)
    comment = models.TextField(blank=True)
    log_level = models.SmallIntegerField(choices=LogLevel.choices, default=LogLevel.BASIC_LOGGING)
    # CREATE_AGENT/ALTER_AGENT's ``service``: a queue's service name (DBA_SERVICES.NAME); the agent
    # runs on the instance owning that queue's queue table (docs/INSTANCES.md). Empty: it follows
    # the owner of its outbound jobs' queue tables.
    service = models.CharField(max_length=400, blank=True)
    # Run time: written by the services (requests) and the agent process (what happened).
    status = models.CharField(
        max_length=16, choices=AgentStatus.choices, default=AgentStatus.NOT_STARTED
    )
    start_token = models.UUIDField(null=True, blank=True)  # names one start; a stale task drops
    shutdown_mode = models.CharField(max_length=10, choices=ShutdownMode.choices, blank=True)
    shutdown_requested = models.BooleanField(default=False)  # a SHUTDOWN seen, for cleanup rules
    restart_at = models.DateTimeField(null=True, blank=True)  # restartable failure: start again
    instance = models.CharField(max_length=255, blank=True)  # the Celery worker's hostname
    instance_name = models.CharField(max_length=64, blank=True)  # its AQ_INSTANCE_NAME
    pid = models.IntegerField(null=True, blank=True)
    start_time = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    memory_mb = models.FloatField(null=True, blank=True)  # the process's RSS at its last beat
    last_error_msg = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # Settings changed while running that apply at the next start (max_memory, max_threads,
    # agent options): MGW's "restart required".
    restart_required = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_threads__gte=1, max_threads__lte=128),
                name="mgw_agent_max_threads_range",
            ),
            models.CheckConstraint(
                condition=Q(log_level__gte=0, log_level__lte=4), name="mgw_agent_log_level_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def celery_queue(self) -> str:
        """The Celery queue whose workers serve this agent."""
        return f"mgw.{self.name}"

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_AGENT

    @property
    def over_memory(self) -> bool:
        """The process used more than max_memory at its last beat (MGW checks, never enforces)."""
        return self.memory_mb is not None and self.memory_mb > self.max_memory


class AgentOption(models.Model):
    """MGW_AGENT_OPTIONS: name/value pairs of an agent (SET_OPTION with AGENT_JAVA_PROP)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="options")
    name = models.CharField(max_length=200)
    value = models.TextField(blank=True)  # the Fernet token when encrypted
    encrypted = models.BooleanField(default=False)

    class Meta:
        ordering = ["agent", "name"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="mgw_agent_option_unique")
        ]

    def __str__(self) -> str:
        return f"{self.agent}.{self.name}"


class Link(models.Model):
    """A messaging system link: how one agent reaches one foreign system."""

    name = models.CharField(max_length=30, unique=True, validators=[name_validator])
    # Fixed at creation (§1.7.1): the agent's queue, log queues and running jobs depend on it.
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="links")
    link_type = models.CharField(max_length=8, choices=LinkType.choices)
    # The type's properties (gateway.drivers.<type>.properties), validated by the driver;
    # the password lives encrypted beside them, never in here.
    properties = models.JSONField(default=dict)
    password_encrypted = models.TextField(blank=True)
    options = models.JSONField(default=dict, blank=True)
    max_connections = models.PositiveSmallIntegerField(default=1)
    # Foreign-side log of outbound batches (AMQP queue, Redis hash): exactly-once where the
    # system can write it with the batch. Inbound log records live in PostgreSQL.
    outbound_log_queue = models.CharField(max_length=255, blank=True)
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_connections__gte=1, max_connections__lte=64),
                name="mgw_link_max_connections_range",
            )
        ]

    def __str__(self) -> str:
        return self.name


class ForeignQueue(models.Model):
    """A registered non-Oracle queue, addressed as ``NAME@LINK``; registering creates nothing in
    the foreign system."""

    name = models.CharField(max_length=30, validators=[name_validator])
    link = models.ForeignKey(Link, on_delete=models.PROTECT, related_name="foreign_queues")
    provider_queue = models.CharField(max_length=512)
    domain = models.CharField(max_length=8, choices=Domain.choices, default=Domain.QUEUE)
    options = models.JSONField(default=dict, blank=True)
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["link__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["name", "link"], name="mgw_foreign_queue_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name}@{self.link.name}"


class Job(models.Model):
    """An MGW propagation job (CREATE_JOB): OUTBOUND from one of our queues to a foreign queue,
    or INBOUND from a foreign queue to one of ours."""

    name = models.CharField(max_length=30, unique=True, validators=[name_validator])
    # Dedupe ids and log keys use this, not the name: a re-created job of the same name is new.
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    direction = models.CharField(max_length=8, choices=Direction.choices)
    link = models.ForeignKey(Link, on_delete=models.PROTECT, related_name="jobs")
    source_queue = models.ForeignKey(
        "queues.Queue", null=True, blank=True, on_delete=models.PROTECT, related_name="mgw_out"
    )
    source_foreign = models.ForeignKey(
        ForeignQueue, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs_in"
    )
    destination_queue = models.ForeignKey(
        "queues.Queue", null=True, blank=True, on_delete=models.PROTECT, related_name="mgw_in"
    )
    destination_foreign = models.ForeignKey(
        ForeignQueue, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs_out"
    )
    exception_queue = models.ForeignKey(
        "queues.Queue", null=True, blank=True, on_delete=models.PROTECT, related_name="mgw_exc"
    )
    exception_foreign = models.ForeignKey(
        ForeignQueue, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs_exc"
    )
    # MGW_<job> on a multi-consumer outbound source; it carries the rule as its subscriber rule.
    subscriber = models.OneToOneField(
        "queues.Subscriber", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    rule = models.TextField(blank=True)
    transformation = models.CharField(max_length=128, blank=True)
    poll_interval = models.FloatField(null=True, blank=True, help_text="Seconds; empty: default.")
    options = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    comment = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.READY)
    propagated_msgs = models.BigIntegerField(default=0)
    exceptionq_msgs = models.BigIntegerField(default=0)
    failures = models.IntegerField(default=0)
    last_error_msg = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)  # back-off after a failure
    recovery = models.CharField(max_length=24, choices=Recovery.choices, blank=True)
    # An outbound batch whose foreign log record was seen without our log: its message ids.
    recovery_batch = models.JSONField(null=True, blank=True)
    last_propagated_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # One job per queue source (§1.9.1); topic sources are checked by the service.
            models.UniqueConstraint(
                fields=["source_queue"],
                condition=Q(source_queue__isnull=False),
                name="mgw_job_one_per_source_queue",
            ),
            models.CheckConstraint(
                condition=(
                    Q(
                        direction=Direction.OUTBOUND,
                        source_queue__isnull=False,
                        destination_foreign__isnull=False,
                        source_foreign__isnull=True,
                        destination_queue__isnull=True,
                        exception_foreign__isnull=True,
                    )
                    | Q(
                        direction=Direction.INBOUND,
                        source_foreign__isnull=False,
                        destination_queue__isnull=False,
                        source_queue__isnull=True,
                        destination_foreign__isnull=True,
                        exception_queue__isnull=True,
                    )
                ),
                name="mgw_job_ends_match_direction",
            ),
            models.CheckConstraint(
                condition=~Q(exception_queue=F("source_queue"))
                & ~Q(exception_foreign=F("source_foreign")),
                name="mgw_job_exception_not_source",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def source_name(self) -> str:
        return str(self.source_queue or self.source_foreign or "")

    @property
    def destination_name(self) -> str:
        return str(self.destination_queue or self.destination_foreign or "")

    @property
    def exception_name(self) -> str:
        return str(self.exception_queue or self.exception_foreign or "")

    @property
    def key(self) -> str:
        """The job's name in foreign log records and subscriptions."""
        return f"mgw-{self.uid}"


class SendLog(models.Model):
    """Outbound log records (Oracle's MGW_SEND_LOG): one per batch, written in the transaction
    that consumed the batch from our queue. With the link's foreign log record, it tells a
    restarted agent whether an interrupted batch reached the foreign system."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="send_log")
    batch = models.UUIDField()
    message_ids = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "batch"], name="mgw_send_log_unique")]

    def __str__(self) -> str:
        return f"{self.job_id}:{self.batch}"


class ReceiveLog(models.Model):
    """Inbound log records (Oracle's MGW_RECV_LOG): the foreign keys of messages enqueued, in
    the enqueue's transaction; a redelivered key is acknowledged and skipped."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="receive_log")
    key = models.CharField(max_length=512)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "key"], name="mgw_receive_log_unique")
        ]
        indexes = [models.Index(fields=["created"], name="mgw_receive_log_created")]

    def __str__(self) -> str:
        return f"{self.job_id}:{self.key}"


class AgentLogLine(models.Model):
    """The agent's log (Oracle's oramgw-<agent>-<host>-<time>-<pid>.log), one row a line."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="log_lines")
    session = models.DateTimeField(null=True, blank=True)  # the agent start it belongs to
    at = models.DateTimeField(auto_now_add=True)
    level = models.SmallIntegerField(default=0)
    severity = models.CharField(max_length=8, default="INFO")  # INFO, WARN, ERROR
    component = models.CharField(max_length=64, blank=True)  # "agent", "job JOB1", …
    code = models.CharField(max_length=8, blank=True)  # MGW error number, e.g. 415
    text = models.TextField()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["agent", "-id"], name="mgw_agent_log_recent")]

    def __str__(self) -> str:
        return self.text[:80]


# --- MGW_* views (migration 0003; read-only) -----------------------------------------------------
# Unmanaged models over the PostgreSQL views of gateway/migrations/0003_mgw_views.py, with MGW's
# column names (spec/gateway.md §3); the *_id keys are surrogate, not Oracle columns.


class MgwGateway(models.Model):
    agent_id = models.BigIntegerField(primary_key=True)
    agent_name = models.CharField(max_length=30)
    agent_status = models.CharField(max_length=16)
    agent_ping = models.CharField(max_length=11, null=True)
    agent_job = models.CharField(max_length=40, null=True)
    agent_user = models.CharField(max_length=128, null=True)
    agent_database = models.CharField(max_length=255, null=True)
    agent_instance = models.CharField(max_length=255, null=True)
    agent_start_time = models.DateTimeField(null=True)
    conntype = models.CharField(max_length=16, null=True)
    max_connections = models.IntegerField(null=True)
    max_memory = models.IntegerField()
    max_threads = models.IntegerField()
    last_error_date = models.DateField(null=True)
    last_error_time = models.CharField(max_length=8, null=True)
    last_error_msg = models.TextField(null=True)
    service = models.CharField(max_length=400, null=True)
    initfile = models.CharField(max_length=255, null=True)
    comments = models.TextField(null=True)
    # Ours: the AQ instance (AQ_INSTANCE_NAME) the live agent runs on.
    instance_name = models.CharField(max_length=64, null=True)

    class Meta:
        managed = False
        db_table = "mgw_gateway"
        ordering = ["agent_name"]

    def __str__(self) -> str:
        return self.agent_name


class MgwAgentOption(models.Model):
    option_id = models.BigIntegerField(primary_key=True)
    agent_name = models.CharField(max_length=30)
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=16)
    value = models.TextField(null=True)
    encrypted = models.CharField(max_length=5)

    class Meta:
        managed = False
        db_table = "mgw_agent_options"
        ordering = ["agent_name", "name"]

    def __str__(self) -> str:
        return f"{self.agent_name}.{self.name}"


class MgwLink(models.Model):
    link_id = models.BigIntegerField(primary_key=True)
    link_name = models.CharField(max_length=30)
    link_type = models.CharField(max_length=8)
    link_comment = models.TextField(null=True)
    agent_name = models.CharField(max_length=30)

    class Meta:
        managed = False
        db_table = "mgw_links"
        ordering = ["link_name"]

    def __str__(self) -> str:
        return self.link_name


class _MgwTypedLink(models.Model):
    """Columns every MGW_<TYPE>_LINKS view has; the type's own properties follow in each."""

    link_id = models.BigIntegerField(primary_key=True)
    link_name = models.CharField(max_length=30)
    agent_name = models.CharField(max_length=30)
    host = models.CharField(max_length=255, null=True)
    port = models.IntegerField(null=True)

    class Meta:
        abstract = True
        ordering = ["link_name"]

    def __str__(self) -> str:
        return self.link_name


class MgwAmqpLink(_MgwTypedLink):
    virtual_host = models.CharField(max_length=255, null=True)
    username = models.CharField(max_length=255, null=True)
    tls = models.CharField(max_length=5, null=True)
    tls_ca_file = models.CharField(max_length=1024, null=True)
    tls_verify = models.CharField(max_length=5, null=True)
    heartbeat = models.IntegerField(null=True)
    client_id = models.CharField(max_length=255, null=True)
    max_connections = models.IntegerField()
    outbound_log_queue = models.CharField(max_length=255, null=True)
    options = models.TextField(null=True)
    link_comment = models.TextField(null=True)

    class Meta(_MgwTypedLink.Meta):
        managed = False
        db_table = "mgw_amqp_links"


class MgwMqttLink(_MgwTypedLink):
    protocol = models.CharField(max_length=8, null=True)
    username = models.CharField(max_length=255, null=True)
    tls = models.CharField(max_length=5, null=True)
    tls_ca_file = models.CharField(max_length=1024, null=True)
    tls_verify = models.CharField(max_length=5, null=True)
    keepalive = models.IntegerField(null=True)
    client_id = models.CharField(max_length=255, null=True)
    max_connections = models.IntegerField()
    outbound_log_queue = models.CharField(max_length=255, null=True)
    options = models.TextField(null=True)
    link_comment = models.TextField(null=True)

    class Meta(_MgwTypedLink.Meta):
        managed = False
        db_table = "mgw_mqtt_links"


class MgwNatsLink(_MgwTypedLink):
    username = models.CharField(max_length=255, null=True)
    tls = models.CharField(max_length=5, null=True)
    tls_ca_file = models.CharField(max_length=1024, null=True)
    tls_verify = models.CharField(max_length=5, null=True)
    client_id = models.CharField(max_length=255, null=True)
    max_connections = models.IntegerField()
    outbound_log_queue = models.CharField(max_length=255, null=True)
    options = models.TextField(null=True)
    link_comment = models.TextField(null=True)

    class Meta(_MgwTypedLink.Meta):
        managed = False
        db_table = "mgw_nats_links"


class MgwRedisLink(_MgwTypedLink):
    db = models.IntegerField(null=True)
    username = models.CharField(max_length=255, null=True)
    tls = models.CharField(max_length=5, null=True)
    tls_ca_file = models.CharField(max_length=1024, null=True)
    tls_verify = models.CharField(max_length=5, null=True)
    client_id = models.CharField(max_length=255, null=True)
    max_connections = models.IntegerField()
    outbound_log_queue = models.CharField(max_length=255, null=True)
    options = models.TextField(null=True)
    link_comment = models.TextField(null=True)

    class Meta(_MgwTypedLink.Meta):
        managed = False
        db_table = "mgw_redis_links"


class MgwForeignQueue(models.Model):
    queue_id = models.BigIntegerField(primary_key=True)
    name = models.CharField(max_length=30)
    link_name = models.CharField(max_length=30)
    provider_queue = models.CharField(max_length=512)
    domain = models.CharField(max_length=8, null=True)
    options = models.TextField(null=True)
    queue_comment = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = "mgw_foreign_queues"
        ordering = ["link_name", "name"]

    def __str__(self) -> str:
        return f"{self.name}@{self.link_name}"


class MgwJob(models.Model):
    job_id = models.BigIntegerField(primary_key=True)
    job_name = models.CharField(max_length=30)
    propagation_type = models.CharField(max_length=8)
    source = models.CharField(max_length=200)
    destination = models.CharField(max_length=200)
    enabled = models.CharField(max_length=5)
    agent_name = models.CharField(max_length=30)
    link_name = models.CharField(max_length=30)
    rule = models.TextField(null=True)
    transformation = models.CharField(max_length=128, null=True)
    exception_queue = models.CharField(max_length=200, null=True)
    poll_interval = models.FloatField(null=True)
    options = models.TextField(null=True)
    comments = models.TextField(null=True)
    status = models.CharField(max_length=16)
    propagated_msgs = models.BigIntegerField()
    exceptionq_msgs = models.BigIntegerField()
    failures = models.IntegerField()
    last_error_msg = models.TextField(null=True)
    last_error_date = models.DateField(null=True)
    last_error_time = models.CharField(max_length=8, null=True)
    prop_style = models.CharField(max_length=6)

    class Meta:
        managed = False
        db_table = "mgw_jobs"
        ordering = ["job_name"]

    def __str__(self) -> str:
        return self.job_name
