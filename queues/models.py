"""Queue topology (written by services) and message storage (written only by the queue engine)."""

import json

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models.functions import Now, Upper
from django.urls import reverse

from core.validators import name_validator, validate_seconds
from queues.choices import (
    DeliveryMode,
    MessageGrouping,
    MessageKind,
    MessageState,
    Privilege,
    QueueKind,
    SortOrder,
)


class QueueTable(models.Model):
    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="queue_tables",
        help_text="The owner may do everything on a secure queue table's queues.",
    )
    sort_order = models.CharField(
        max_length=24, choices=SortOrder.choices, default=SortOrder.ENQ_TIME
    )
    multiple_consumers = models.BooleanField(default=False)
    message_grouping = models.CharField(
        max_length=16, choices=MessageGrouping.choices, default=MessageGrouping.NONE
    )
    secure = models.BooleanField(default=False)
    payload_type = models.CharField(
        max_length=128,
        default="ANY",
        help_text="ANY for self-describing JSON, or a type name whose payloads the schema validates.",
    )
    payload_schema = models.JSONField(null=True, blank=True)
    # Instance affinity (DBMS_AQADM.CREATE/ALTER_QUEUE_TABLE primary_instance and
    # secondary_instance); the owner is computed from them and written only by
    # queues.services.queue_table_owners_refresh (instances.ownership has the rule).
    primary_instance = models.ForeignKey(
        "instances.Instance",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Owns the queue table while it is up.",
    )
    secondary_instance = models.ForeignKey(
        "instances.Instance",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Owns it while the primary instance is down.",
    )
    owner_instance = models.ForeignKey(
        "instances.Instance", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(primary_instance=models.F("secondary_instance")),
                name="queuetable_secondary_is_not_primary",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("queues:queuetable_detail", args=[self.pk])

    @property
    def is_typed(self) -> bool:
        return self.payload_type.upper() != "ANY"

    @property
    def is_commit_time(self) -> bool:
        return self.sort_order in (SortOrder.COMMIT_TIME, SortOrder.PRIORITY_COMMIT_TIME)


class Queue(models.Model):
    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    queue_table = models.ForeignKey(QueueTable, on_delete=models.PROTECT, related_name="queues")
    kind = models.CharField(max_length=16, choices=QueueKind.choices, default=QueueKind.NORMAL)
    exception_queue = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="source_queues",
        help_text="Where failed and expired messages go; the queue table's default when empty.",
    )
    max_retries = models.PositiveIntegerField(default=5)
    # Seconds; past MAX_SECONDS the engine's now() + interval would overflow at release/cleanup.
    retry_delay = models.FloatField(default=0, validators=[MinValueValidator(0), validate_seconds])
    retention_time = models.FloatField(
        default=0, validators=[MinValueValidator(0), validate_seconds]
    )
    enqueue_enabled = models.BooleanField(default=True)
    dequeue_enabled = models.BooleanField(default=True)
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(retry_delay__gte=0), name="queue_retry_delay_not_negative"
            ),
            models.CheckConstraint(
                condition=models.Q(retention_time__gte=0), name="queue_retention_not_negative"
            ),
        ]
        # Queues are found by name whatever its case (name__iexact: CREATE_JOB's ends, the
        # filters' NameOrIdFilter): without this, each lookup walks the name index (15 ms at
        # 10,000 queues).
        indexes = [models.Index(Upper("name"), name="queue_name_upper")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("queues:queue_detail", args=[self.pk])

    @property
    def is_exception(self) -> bool:
        return self.kind == QueueKind.EXCEPTION


class Agent(models.Model):
    """An AQ agent: a named identity that enqueues (sender) or dequeues (subscriber)."""

    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    address = models.CharField(max_length=256, blank=True)
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="AgentUser", related_name="aq_agents", blank=True
    )
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class AgentUser(models.Model):
    """DBMS_AQADM.ENABLE_DB_ACCESS: the user may act as the agent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "user"], name="agent_user_unique")]

    def __str__(self) -> str:
        return f"{self.agent} ↔ {self.user}"


class QueuePrivilege(models.Model):
    """DBMS_AQADM.GRANT_QUEUE_PRIVILEGE: ENQUEUE, DEQUEUE or ALL on one queue."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="privileges")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    privilege = models.CharField(max_length=8, choices=Privilege.choices)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["queue__name", "user__username", "privilege"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "user", "privilege"], name="queue_privilege_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.privilege} on {self.queue} to {self.user}"


class Subscriber(models.Model):
    """A consumer of a multi-consumer queue; gets each message enqueued while it exists."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="subscribers")
    name = models.CharField(max_length=128, validators=[name_validator])
    address = models.CharField(max_length=256, blank=True)
    rule = models.TextField(
        blank=True,
        help_text=(
            "A rule condition (:msg for user messages, :dml / :ddl for change records); the "
            "subscriber receives only the messages it is TRUE for. Empty: every message."
        ),
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "name"], name="subscriber_unique_per_queue")
        ]

    def __str__(self) -> str:
        return f"{self.name} on {self.queue}"


class Message(models.Model):
    """A message row. Written only by ``queues.engine`` (raw SQL); read here for pages and API.

    The table is partitioned per queue table (queues/engine/storage.py, migration 0010): the
    database's primary key is (id, queue_table_id, in_buffer); ids stay unique, from one sequence.
    """

    # The composite indexes below cover queue lookups; one index fewer is a cheaper enqueue.
    # No database foreign keys (migration 0011): each one made every enqueue lock its parent row
    # at commit (a WAL record; measured 6 points of the plain-table insert rate). The engine's
    # statements check the queue as they write, and queue_delete/queue_table_delete lock the
    # queue table's storage before counting its messages (queues/engine/storage.py lock_storage).
    queue = models.ForeignKey(
        Queue,
        on_delete=models.PROTECT,
        related_name="messages",
        db_index=False,
        db_constraint=False,
    )
    queue_table = models.ForeignKey(
        QueueTable,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    state = models.CharField(max_length=10, choices=MessageState.choices)
    priority = models.IntegerField(default=1)
    # Dequeue order is (sort_pri, commit_seq, id): sort_pri is the priority on priority-ordered
    # tables and 0 elsewhere; commit_seq is set at commit on commit-time tables and 0 elsewhere.
    sort_pri = models.IntegerField(default=0)
    commit_seq = models.BigIntegerField(null=True)
    kind = models.CharField(max_length=8, choices=MessageKind.choices, default=MessageKind.USER)
    type_name = models.CharField(max_length=128, blank=True)
    correlation = models.CharField(max_length=128, blank=True)
    sender = models.CharField(max_length=128, blank=True)
    headers = models.JSONField(default=dict)
    payload = models.JSONField(null=True)
    enq_time = models.DateTimeField()
    enq_user = models.CharField(max_length=150, blank=True)
    delay_until = models.DateTimeField(null=True)
    expiration = models.FloatField(null=True, help_text="Seconds a READY message may wait.")
    expire_at = models.DateTimeField(null=True)
    attempts = models.IntegerField(default=0)
    locked_until = models.DateTimeField(null=True)
    lock_token = models.UUIDField(null=True)
    pending_consumers = models.IntegerField(default=0)
    processed_at = models.DateTimeField(null=True)
    original_queue = models.ForeignKey(
        Queue,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    exception_reason = models.CharField(max_length=200, blank=True)
    replayed = models.BooleanField(default=False)
    # Set only by Spark bulk jobs: with the queue, the per-destination idempotency key that makes
    # a re-run of a job never enqueue the same source message twice at a destination.
    bulk_job_id = models.BigIntegerField(null=True, blank=True)
    bulk_source_id = models.BigIntegerField(null=True, blank=True)
    delivery_mode = models.CharField(
        max_length=10, choices=DeliveryMode.choices, db_default=DeliveryMode.PERSISTENT
    )
    # Where a message is stored: True in the queue table's UNLOGGED buffer, False on logged
    # storage (persistent messages, and buffered ones that spilled).
    in_buffer = models.BooleanField(db_default=False)
    # On TRANSACTIONAL queue tables, the enqueuing transaction (its xid8): the message group.
    txn_group = models.BigIntegerField(null=True, blank=True)
    # Directed networks (docs/SITES.md "Origin, route and tag"): NULL on a message enqueued at
    # this site, so the enqueue writes nothing more. A message received from another site has
    # its origin site's GLOBAL_NAME and the sites it left, in order (the last one sent it here).
    origin_site = models.CharField(max_length=255, null=True, blank=True)
    route = ArrayField(models.CharField(max_length=255), null=True, blank=True)
    # Oracle's Streams tag (RAW(2000)); NULL unless the enqueuer gave one. Travels unchanged.
    tag = models.BinaryField(max_length=2000, null=True, blank=True)

    class Meta:
        db_table = "aq_message"
        ordering = ["sort_pri", "commit_seq", "id"]
        indexes = [
            # One index serves dequeue in both visible states (READY, and EXPIRED in exception
            # queues) and the depth counts, in dequeue order. A partial index on READY alone was
            # picked or skipped at the planner's whim when the table had no statistics yet.
            models.Index(
                fields=["queue", "state", "sort_pri", "commit_seq", "id"],
                name="aq_message_dequeue_v2",
            ),
            models.Index(
                fields=["delay_until"],
                name="aq_message_waiting",
                condition=models.Q(state="WAITING"),
            ),
            models.Index(
                fields=["expire_at"],
                name="aq_message_expiring",
                condition=models.Q(state="READY", expire_at__isnull=False),
            ),
            models.Index(
                fields=["locked_until"],
                name="aq_message_leased",
                condition=models.Q(locked_until__isnull=False),
            ),
            models.Index(
                fields=["processed_at"],
                name="aq_message_processed",
                condition=models.Q(state="PROCESSED"),
            ),
            models.Index(
                fields=["original_queue"],
                name="aq_message_original",
                condition=models.Q(original_queue__isnull=False),
            ),
            # A transaction group's messages, for the grouped dequeue (queues/engine/grouping.py).
            models.Index(
                fields=["queue", "txn_group"],
                name="aq_message_txn_group",
                condition=models.Q(txn_group__isnull=False),
            ),
        ]
        constraints = [
            # The partition keys are part of every unique index of a partitioned table; a queue
            # belongs to one queue table, and bulk jobs write persistent messages only.
            models.UniqueConstraint(
                fields=["queue", "bulk_job_id", "bulk_source_id", "queue_table", "in_buffer"],
                # A copy moved to an exception queue keeps its key but leaves the index, so two
                # copies of one source message failing in one exception queue never collide.
                condition=models.Q(bulk_job_id__isnull=False, original_queue__isnull=True),
                name="aq_message_bulk_key",
            ),
        ]

    def __str__(self) -> str:
        return f"message {self.pk} on {self.queue_id}"

    @property
    def payload_pretty(self) -> str:
        return json.dumps(self.payload, indent=2, sort_keys=True, ensure_ascii=False)


class MessageConsumer(models.Model):
    """One subscriber's pending copy of a message in a multi-consumer queue, stored in its
    message's partition (same queue table and in_buffer). The engine removes copies with their
    message, so the link is not a database foreign key (partitioned tables cannot carry one to a
    key without the partition columns)."""

    message = models.ForeignKey(
        Message, on_delete=models.DO_NOTHING, related_name="consumers", db_constraint=False
    )
    queue_table = models.ForeignKey(
        QueueTable,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    in_buffer = models.BooleanField(db_default=False)
    subscriber = models.ForeignKey(
        Subscriber, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    attempts = models.IntegerField(default=0)
    locked_until = models.DateTimeField(null=True)
    lock_token = models.UUIDField(null=True)

    class Meta:
        db_table = "aq_message_consumer"
        constraints = [
            models.UniqueConstraint(
                fields=["subscriber", "message", "queue_table", "in_buffer"],
                name="aq_message_consumer_unique",
            )
        ]

    def __str__(self) -> str:
        return f"message {self.message_id} for subscriber {self.subscriber_id}"


class MessageGroupLease(models.Model):
    """Who owns a transaction group of a TRANSACTIONAL queue table: the consumer that took its
    first message holds it (by ``owner_token``) until it has taken the last one or the lease runs
    out, so a group is never split between consumers. Written only by queues/engine/grouping.py;
    ``subscriber_id`` is 0 on single-consumer queues."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+", db_index=False)
    subscriber_id = models.BigIntegerField(default=0)
    txn_group = models.BigIntegerField()
    owner_token = models.UUIDField()
    leased_until = models.DateTimeField()
    # Messages of the group handed out so far: the next one's 1-based place in the group.
    handed = models.IntegerField(default=0)

    class Meta:
        db_table = "aq_message_group"
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "subscriber_id", "txn_group"], name="aq_message_group_key"
            )
        ]

    def __str__(self) -> str:
        return f"group {self.txn_group} of queue {self.queue_id}"


class QueueStat(models.Model):
    """Enqueue and dequeue counters, sharded by backend so concurrent clients don't contend."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+", db_index=False)
    shard = models.SmallIntegerField()
    enqueued = models.BigIntegerField(default=0)
    dequeued = models.BigIntegerField(default=0)

    class Meta:
        db_table = "aq_queue_stat"
        constraints = [
            models.UniqueConstraint(fields=["queue", "shard"], name="aq_queue_stat_unique")
        ]

    def __str__(self) -> str:
        return f"counters of queue {self.queue_id} shard {self.shard}"


class QueueTableOwnerMove(models.Model):
    """One change of a queue table's owner instance (failover, failback, a new primary), written
    only by queues.services with the change-log row of the same move."""

    at = models.DateTimeField(db_default=Now())
    queue_table = models.ForeignKey(
        QueueTable, null=True, on_delete=models.SET_NULL, related_name="owner_moves"
    )
    queue_table_name = models.CharField(max_length=128)  # kept once the queue table is dropped
    from_instance = models.ForeignKey(
        "instances.Instance", null=True, on_delete=models.PROTECT, related_name="+"
    )
    to_instance = models.ForeignKey(
        "instances.Instance", null=True, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.CharField(max_length=200)

    class Meta:
        db_table = "aq_queue_table_owner_log"
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return (
            f"{self.queue_table_name}: {self.from_instance_id or 0} -> {self.to_instance_id or 0}"
        )


# --- Oracle-named status views (created by migration 0002; read-only) ----------------------------


class DbaQueueTable(models.Model):
    queue_table_id = models.BigIntegerField(primary_key=True)
    owner = models.CharField(max_length=150)
    queue_table = models.CharField(max_length=128)
    type = models.CharField(max_length=16)
    object_type = models.CharField(max_length=128)
    sort_order = models.CharField(max_length=32)
    recipients = models.CharField(max_length=8)
    message_grouping = models.CharField(max_length=16)
    compatible = models.CharField(max_length=16)
    primary_instance = models.IntegerField()
    secondary_instance = models.IntegerField()
    owner_instance = models.IntegerField()
    user_comment = models.TextField()
    secure = models.CharField(max_length=3)

    class Meta:
        managed = False
        db_table = "dba_queue_tables"
        ordering = ["queue_table"]

    def __str__(self) -> str:
        return self.queue_table


class DbaQueue(models.Model):
    qid = models.BigIntegerField(primary_key=True)
    owner = models.CharField(max_length=150)
    name = models.CharField(max_length=128)
    queue_table = models.CharField(max_length=128)
    queue_type = models.CharField(max_length=16)
    max_retries = models.IntegerField()
    retry_delay = models.FloatField()
    enqueue_enabled = models.CharField(max_length=8)
    dequeue_enabled = models.CharField(max_length=8)
    retention = models.CharField(max_length=40)
    user_comment = models.TextField()
    network_name = models.CharField(max_length=128)
    sharded = models.CharField(max_length=8)
    queue_category = models.CharField(max_length=40)
    recipients = models.CharField(max_length=8)

    class Meta:
        managed = False
        db_table = "dba_queues"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DbaService(models.Model):
    """DBA_SERVICES: one service per queue, resolving to its queue table's owner instance (the
    INST_ID, INSTANCE_NAME and HOST_NAME columns are ours: Oracle keeps them in
    GV$ACTIVE_SERVICES)."""

    service_id = models.BigIntegerField(primary_key=True)
    name = models.CharField(max_length=400)
    network_name = models.CharField(max_length=400)
    creation_date = models.DateTimeField()
    queue_name = models.CharField(max_length=128)
    queue_table = models.CharField(max_length=128)
    inst_id = models.IntegerField()
    instance_name = models.CharField(max_length=64, null=True)
    host_name = models.CharField(max_length=255, null=True)

    class Meta:
        managed = False
        db_table = "dba_services"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DbaQueueTableOwnerLog(models.Model):
    """Ownership moves of queue tables (ours; Oracle has none): time, from, to and why."""

    log_id = models.BigIntegerField(primary_key=True)
    move_time = models.DateTimeField()
    queue_table = models.CharField(max_length=128)
    from_instance = models.IntegerField()
    from_instance_name = models.CharField(max_length=64, null=True)
    to_instance = models.IntegerField()
    to_instance_name = models.CharField(max_length=64, null=True)
    reason = models.CharField(max_length=200)

    class Meta:
        managed = False
        db_table = "dba_queue_table_owner_log"
        ordering = ["-move_time", "-log_id"]

    def __str__(self) -> str:
        return f"{self.queue_table}: {self.from_instance} -> {self.to_instance}"


class DbaAqAgentPriv(models.Model):
    agent_user_id = models.BigIntegerField(primary_key=True)
    agent_id = models.BigIntegerField()
    agent_name = models.CharField(max_length=128)
    db_username = models.CharField(max_length=150)
    http_enabled = models.CharField(max_length=3)
    smtp_enabled = models.CharField(max_length=3)

    class Meta:
        managed = False
        db_table = "dba_aq_agent_privs"
        ordering = ["agent_name", "db_username"]

    def __str__(self) -> str:
        return f"{self.agent_name} ↔ {self.db_username}"


# --- the buffer's counters (UNLOGGED tables, written only by queues.engine.buffered) -------------


class BufferStat(models.Model):
    """Counters of a buffered queue per publisher (sender) and shard, in an UNLOGGED table (set by
    migration 0012): like Oracle's V$ figures they start again when the database restarts after a
    crash, together with the buffer they describe, and the buffered path writes no WAL for them."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+", db_index=False)
    sender = models.CharField(max_length=128, blank=True, db_default="")
    shard = models.SmallIntegerField()
    started_at = models.DateTimeField(db_default=Now())
    enqueued = models.BigIntegerField(db_default=0)
    dequeued = models.BigIntegerField(db_default=0)
    spilled = models.BigIntegerField(db_default=0)
    expired = models.BigIntegerField(db_default=0)
    last_msgid = models.BigIntegerField(null=True)
    last_enq = models.DateTimeField(null=True)
    last_deq = models.DateTimeField(null=True)
    state = models.CharField(max_length=64, null=True)
    state_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "aq_buffer_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "sender", "shard"], name="aq_buffer_stat_unique"
            )
        ]

    def __str__(self) -> str:
        return f"buffer counters of queue {self.queue_id} sender {self.sender!r} shard {self.shard}"


class BufferSubscriberStat(models.Model):
    """Buffered dequeues per subscriber and shard (V$BUFFERED_SUBSCRIBERS), UNLOGGED likewise."""

    subscriber = models.ForeignKey(
        Subscriber, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    shard = models.SmallIntegerField()
    dequeued = models.BigIntegerField(db_default=0)
    last_msgid = models.BigIntegerField(null=True)
    last_deq = models.DateTimeField(null=True)

    class Meta:
        db_table = "aq_buffer_sub_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["subscriber", "shard"], name="aq_buffer_sub_stat_unique"
            )
        ]

    def __str__(self) -> str:
        return f"buffered dequeues of subscriber {self.subscriber_id} shard {self.shard}"


# --- V$BUFFERED_* (views of migration 0012; read-only) -------------------------------------------


class VBufferedQueue(models.Model):
    queue_id = models.BigIntegerField(primary_key=True)
    queue_schema = models.CharField(max_length=150)
    queue_name = models.CharField(max_length=128)
    startup_time = models.DateTimeField(null=True)
    num_msgs = models.BigIntegerField()
    spill_msgs = models.BigIntegerField()
    cnum_msgs = models.BigIntegerField()
    cspill_msgs = models.BigIntegerField()
    expired_msgs = models.BigIntegerField()
    oldest_msgid = models.BigIntegerField(null=True)
    oldest_msg_enqtm = models.DateTimeField(null=True)
    queue_state = models.CharField(max_length=25)
    avg_msg_age = models.FloatField(null=True)
    last_enqueue_time = models.DateTimeField(null=True)
    last_dequeue_time = models.DateTimeField(null=True)
    queue_size = models.BigIntegerField()

    class Meta:
        managed = False
        db_table = "v_buffered_queues"
        ordering = ["queue_name"]

    def __str__(self) -> str:
        return self.queue_name


class VBufferedSubscriber(models.Model):
    subscriber_id = models.BigIntegerField(primary_key=True)
    queue_id = models.BigIntegerField()
    queue_schema = models.CharField(max_length=150)
    queue_name = models.CharField(max_length=128)
    subscriber_name = models.CharField(max_length=128)
    subscriber_address = models.CharField(max_length=256)
    subscriber_type = models.CharField(max_length=16)
    startup_time = models.DateTimeField(null=True)
    last_dequeued_num = models.BigIntegerField(null=True)
    num_msgs = models.BigIntegerField()
    total_dequeued_msg = models.BigIntegerField()
    total_spilled_msg = models.BigIntegerField()
    avg_msg_age = models.FloatField(null=True)
    last_dequeue_time = models.DateTimeField(null=True)

    class Meta:
        managed = False
        db_table = "v_buffered_subscribers"
        ordering = ["queue_name", "subscriber_name"]

    def __str__(self) -> str:
        return f"{self.subscriber_name} on {self.queue_name}"


class VBufferedPublisher(models.Model):
    publisher_key = models.CharField(max_length=200, primary_key=True)
    queue_id = models.BigIntegerField()
    queue_schema = models.CharField(max_length=150)
    queue_name = models.CharField(max_length=128)
    sender_name = models.CharField(max_length=128)
    num_msgs = models.BigIntegerField()
    cnum_msgs = models.BigIntegerField()
    last_enqueued_msg = models.BigIntegerField(null=True)
    last_enqueue_time = models.DateTimeField(null=True)
    publisher_state = models.CharField(max_length=59)

    class Meta:
        managed = False
        db_table = "v_buffered_publishers"
        ordering = ["queue_name", "sender_name"]

    def __str__(self) -> str:
        return f"{self.sender_name or '(no sender)'} on {self.queue_name}"


class PropagationReceipt(models.Model):
    """At a destination site: which source messages a remote propagation has already delivered
    here. Written by the engine (``engine.receive``) in the transaction that enqueues the
    copies, so a batch re-sent after the source failed to commit is skipped, not doubled. The
    source deletes the rows it no longer needs (docs/SITES.md, "Exactly once")."""

    source_site = models.CharField(max_length=255)  # the source's GLOBAL_NAME
    # The propagation's name at the source (queue-to-queue), or its job's SOURCE_QUEUE@LINK
    # (queue-to-dblink: one receipt per message, however many queues here take it).
    stream = models.CharField(max_length=300)
    source_msgid = models.BigIntegerField()
    received_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "aq_propagation_receipt"
        constraints = [
            models.UniqueConstraint(
                fields=["source_site", "stream", "source_msgid"], name="aq_receipt_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source_site}/{self.stream}#{self.source_msgid}"


class PropagationArrival(models.Model):
    """At a destination site: what remote propagations delivered into each queue here, in
    total (V$PROPAGATION_RECEIVER). Receipts are pruned, so they cannot hold totals; the
    engine (``engine.receive``) adds to these counters in the transaction that enqueues."""

    source_site = models.CharField(max_length=255)  # the source's GLOBAL_NAME
    source_queue = models.CharField(max_length=128)  # the queue's name at the source
    stream = models.CharField(max_length=300)  # as in the receipts
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+")
    total_msgs = models.BigIntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    batches = models.BigIntegerField(default=0)  # arrivals: one per batch that brought messages
    elapsed_enqueue_time = models.FloatField(default=0)
    first_arrival = models.DateTimeField(db_default=Now())
    last_arrival = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "aq_propagation_arrival"
        constraints = [
            models.UniqueConstraint(
                fields=["source_site", "stream", "queue"], name="aq_arrival_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source_site}/{self.stream} -> {self.queue_id}"
