"""Propagations, their schedules and runs, maintenance mode and Celery worker heartbeats.

A propagation moves messages from a source queue to a destination queue as a subscriber of the
source (so the source keeps a message until every propagation and local subscriber has it). Its
schedule opens windows; inside a window, runs (one Celery task each) move batches. Runs are rows
created before their task is sent, so a lost or duplicated task is visible and harmless.
"""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from core.validators import name_validator
from jobs.choices import (
    RunEnd,
    RunState,
    SparkJobPhase,
    SparkJobState,
    SparkMode,
    SparkSelection,
)


class Propagation(models.Model):
    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    source_queue = models.ForeignKey(
        "queues.Queue", on_delete=models.PROTECT, related_name="propagations_out"
    )
    # A local destination queue, or (NULL here) the queue ``destination_remote_queue`` at the
    # site of database link ``destination_dblink`` (QUEUE@LINK).
    destination_queue = models.ForeignKey(
        "queues.Queue",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="propagations_in",
    )
    # The link's name (links are never renamed; sites.hooks refuses dropping a used one).
    destination_dblink = models.CharField(max_length=128, blank=True)
    destination_remote_queue = models.CharField(max_length=128, blank=True)
    positive_rule_set = models.ForeignKey(
        "rules.RuleSet", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    negative_rule_set = models.ForeignKey(
        "rules.RuleSet", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    queue_to_queue = models.BooleanField(default=True)
    enabled = models.BooleanField(
        default=True, help_text="START_PROPAGATION / STOP_PROPAGATION; the schedule has its own."
    )
    # The propagation dequeues as this subscriber of the source queue (ensured delivery).
    subscriber = models.OneToOneField(
        "queues.Subscriber", on_delete=models.PROTECT, related_name="propagation"
    )
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["source_queue", "destination_queue"], name="propagation_unique_pair"
            ),
            models.CheckConstraint(
                condition=~Q(source_queue=F("destination_queue")),
                name="propagation_not_to_itself",
            ),
            models.UniqueConstraint(
                fields=["source_queue", "destination_dblink", "destination_remote_queue"],
                condition=~Q(destination_dblink=""),
                name="propagation_unique_remote_pair",
            ),
            models.CheckConstraint(
                condition=(
                    Q(destination_queue__isnull=False)
                    & Q(destination_dblink="")
                    & Q(destination_remote_queue="")
                )
                | (
                    Q(destination_queue__isnull=True)
                    & ~Q(destination_dblink="")
                    & ~Q(destination_remote_queue="")
                ),
                name="propagation_one_destination",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("jobs:propagation", args=[self.pk])

    @property
    def is_remote(self) -> bool:
        return bool(self.destination_dblink)

    @property
    def destination_queue_name(self) -> str:
        """The destination queue's name, here or at the link's site."""
        if self.is_remote:
            return self.destination_remote_queue
        return self.destination_queue.name if self.destination_queue else ""

    @property
    def destination(self) -> str:
        """The destination as AQ names it: QUEUE, or QUEUE@LINK for a remote one."""
        if self.is_remote:
            return f"{self.destination_remote_queue}@{self.destination_dblink}"
        return self.destination_queue.name if self.destination_queue else ""

    @property
    def shares_job(self) -> bool:
        """Queue-to-dblink (spec/queues.md §2.4): one job and schedule per (source queue,
        link), shared by every such propagation. A local propagation has no link to share."""
        return not self.queue_to_queue and self.is_remote

    @property
    def job_name(self) -> str:
        """The job's identity: the propagation's name, or SOURCE_QUEUE@LINK for a shared job
        (also the receipt stream at the destination site)."""
        if self.shares_job:
            return f"{self.source_queue.name}@{self.destination_dblink}"
        return self.name

    def job_members(self) -> models.QuerySet[Propagation]:
        """The propagations sharing this one's job, itself included, in id order (the first
        one's row holds the job: its runs are the job's runs)."""
        if not self.shares_job:
            return Propagation.objects.filter(pk=self.pk)
        return Propagation.objects.filter(
            queue_to_queue=False,
            source_queue_id=self.source_queue_id,
            destination_dblink=self.destination_dblink,
        ).order_by("pk")


class PropagationSchedule(models.Model):
    """DBMS_AQADM.SCHEDULE_PROPAGATION's parameters plus the schedule's live bookkeeping."""

    propagation = models.OneToOneField(
        Propagation, on_delete=models.CASCADE, related_name="schedule"
    )
    start_time = models.DateTimeField(default=timezone.now)
    duration = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.001)],
        help_text="Window length in seconds; empty: the window never ends.",
    )
    next_time = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "When the next window opens after one ends: an interval (90s, 10m, 1h30m, PT10M, "
            "SYSDATE + 1/24) from the window's end, or a cron expression. Empty: at once."
        ),
    )
    latency = models.FloatField(
        default=3.0,
        validators=[MinValueValidator(0)],
        help_text="Seconds: the longest a new message waits in an idle source queue.",
    )
    enabled = models.BooleanField(default=True)
    max_failures = models.PositiveIntegerField(
        default=16, help_text="Consecutive failures after which the schedule disables itself."
    )

    # --- bookkeeping, written by the dispatcher and the runs ---
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    # The run holding the window. The schedules of a queue-to-dblink job (its propagations
    # from one source queue over one link) are kept alike and all name the job's one run.
    run = models.ForeignKey(
        "PropagationRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    failures = models.PositiveIntegerField(default=0)
    last_error_msg = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    total_runs = models.BigIntegerField(default=0)
    total_number = models.BigIntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    total_time = models.FloatField(default=0)
    total_discarded = models.BigIntegerField(default=0)
    total_exceptions = models.BigIntegerField(default=0)
    max_number = models.BigIntegerField(default=0)
    max_bytes = models.BigIntegerField(default=0)
    elapsed_dequeue_time = models.FloatField(default=0)
    elapsed_rule_time = models.FloatField(default=0)
    elapsed_enqueue_time = models.FloatField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["propagation__name"]
        indexes = [models.Index(fields=["next_run_at"], name="jobs_sched_next_run")]

    def __str__(self) -> str:
        return f"schedule of {self.propagation}"


class PropagationRun(models.Model):
    """One Celery task's stay in a window: claimed by a conditional UPDATE, so a redelivered or
    duplicated task finds it taken and does nothing."""

    propagation = models.ForeignKey(Propagation, on_delete=models.CASCADE, related_name="runs")
    state = models.CharField(max_length=10, choices=RunState.choices, default=RunState.QUEUED)
    end_reason = models.CharField(max_length=16, choices=RunEnd.choices, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=255, blank=True)
    pid = models.IntegerField(null=True, blank=True)
    session_id = models.IntegerField(null=True, blank=True)  # the run's PostgreSQL backend pid
    queued_at = models.DateTimeField(default=timezone.now)
    # When its task was last sent: the reaper sends it again if the broker lost it.
    sent_at = models.DateTimeField(null=True, blank=True)
    # The instance whose Celery queue its task was last sent to (the source queue table's
    # owner then); empty when it was never sent (the caller ran it).
    instance = models.CharField(max_length=64, blank=True, db_default="")
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    waiting = models.BooleanField(default=False)  # idle, listening for new messages
    batches = models.IntegerField(default=0)
    messages = models.BigIntegerField(default=0)  # taken from the source
    propagated = models.BigIntegerField(default=0)  # enqueued at the destination
    bytes = models.BigIntegerField(default=0)
    discarded = models.BigIntegerField(default=0)
    exceptions = models.BigIntegerField(default=0)
    dequeue_time = models.FloatField(default=0)
    rule_time = models.FloatField(default=0)
    enqueue_time = models.FloatField(default=0)
    error = models.TextField(blank=True)
    folded = models.BooleanField(default=False)  # counters added to the schedule's totals

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["propagation", "-id"], name="jobs_run_prop_recent"),
            models.Index(
                fields=["state"],
                name="jobs_run_live",
                condition=Q(state__in=[RunState.QUEUED, RunState.RUNNING]),
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.propagation_id}"

    @property
    def elapsed(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at or timezone.now()
        return (end - self.started_at).total_seconds()


class Maintenance(models.Model):
    """Oracle's RESTRICTED SESSION, console-wide: no new window run starts while it is on; running
    ones finish. One row (pk=1)."""

    restricted = models.BooleanField(default=False)
    since = models.DateTimeField(null=True, blank=True)
    by = models.CharField(max_length=150, blank=True)
    reason = models.TextField(blank=True)

    def __str__(self) -> str:
        return "maintenance mode" if self.restricted else "normal operation"


class Worker(models.Model):
    """A Celery worker as its own heartbeat reports it (works on every broker, the filesystem one
    included, where Celery's remote control does not)."""

    hostname = models.CharField(max_length=255, unique=True)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    pool = models.CharField(max_length=32, blank=True)
    concurrency = models.IntegerField(default=0)
    active = models.JSONField(default=list)  # [{"id", "name", "args"}] running right now
    processed = models.BigIntegerField(default=0)
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    # Its AQ_INSTANCE_NAME: the instance it works for (and whose Celery queue it consumes).
    instance = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return self.hostname


# --- Spark bulk propagation jobs -----------------------------------------------------------------


class SparkJob(models.Model):
    """A bulk copy or move of a source queue's backlog to destination queues, run by a PySpark
    application (``jobs/spark/app.py``) that a Celery task submits and follows.

    ``spec`` is frozen at the first submission (the id bound and the partition boundaries): a
    re-run is a new attempt of the same job, so the per-part markers and the per-destination
    idempotency keys (``aq_message.bulk_job_id``/``bulk_source_id``) still mean the same rows."""

    name = models.CharField(max_length=128, blank=True)
    # A job is history: dropping its queues or propagations later keeps it, by name. A running
    # job whose queue is dropped fails at its next part (nothing of that part is written).
    source_queue = models.ForeignKey(
        "queues.Queue", null=True, on_delete=models.SET_NULL, related_name="spark_jobs"
    )
    source_name = models.CharField(max_length=128)
    selection = models.CharField(
        max_length=16, choices=SparkSelection.choices, default=SparkSelection.ALL_READY
    )
    enq_time_from = models.DateTimeField(null=True, blank=True)
    enq_time_to = models.DateTimeField(null=True, blank=True)
    correlation = models.CharField(max_length=128, blank=True)
    condition = models.TextField(blank=True)
    mode = models.CharField(max_length=4, choices=SparkMode.choices, default=SparkMode.COPY)
    dry_run = models.BooleanField(default=False)
    master = models.CharField(max_length=255, blank=True, help_text="Empty: SPARK_MASTER.")
    executors = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    executor_cores = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    executor_memory = models.CharField(max_length=16, default="1g")

    spec = models.JSONField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    state = models.CharField(
        max_length=10, choices=SparkJobState.choices, default=SparkJobState.SUBMITTED
    )
    phase = models.CharField(
        max_length=10, choices=SparkJobPhase.choices, default=SparkJobPhase.QUEUED
    )
    # When this attempt entered each phase it went through ({phase: ISO time}); a phase shorter
    # than the follower's poll may be missing.
    phase_at = models.JSONField(default=dict, blank=True)
    cancel_requested = models.BooleanField(default=False)
    app_id = models.CharField(max_length=128, blank=True)
    tasks_done = models.IntegerField(default=0)
    tasks_total = models.IntegerField(default=0)
    celery_task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=255, blank=True)
    pid = models.IntegerField(null=True, blank=True)  # the spark-submit process group
    submitted_by = models.CharField(max_length=150, blank=True)
    submitted_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    driver_log_tail = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # A dry run's answer: {"read": n, "discarded": n, "per_destination": {queue name: n}}.
    dry_run_result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["state"],
                name="jobs_spark_live",
                condition=Q(state__in=[SparkJobState.SUBMITTED, SparkJobState.RUNNING]),
            ),
        ]

    def __str__(self) -> str:
        return self.name or f"spark job {self.pk}"

    @property
    def duration(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class SparkJobDestination(models.Model):
    """One destination of a bulk job: a queue, or a propagation out of the job's source whose
    rule sets (and transformations) decide which messages it gets and whose subscriber a move
    consumes."""

    job = models.ForeignKey(SparkJob, on_delete=models.CASCADE, related_name="destinations")
    queue = models.ForeignKey(
        "queues.Queue", null=True, on_delete=models.SET_NULL, related_name="spark_destinations"
    )
    queue_name = models.CharField(max_length=128)
    propagation = models.ForeignKey(
        Propagation, null=True, blank=True, on_delete=models.SET_NULL, related_name="spark_jobs"
    )
    propagation_name = models.CharField(max_length=128, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "queue_name"], name="spark_destination_unique"),
        ]

    def __str__(self) -> str:
        return self.propagation_name or self.queue_name


class SparkJobPart(models.Model):
    """The done-marker of one frozen partition, written by the Spark writer in the same
    transaction as the part's messages (raw SQL in ``jobs/spark/sink.py``): a part is either
    wholly written with its marker or not at all. Counters sum to the job's."""

    job = models.ForeignKey(SparkJob, on_delete=models.CASCADE, related_name="parts")
    part_no = models.IntegerField()
    attempt = models.IntegerField(default=0)
    read = models.BigIntegerField(default=0)
    discarded = models.BigIntegerField(default=0)
    exceptions = models.BigIntegerField(default=0)
    gone = models.BigIntegerField(default=0)  # dequeued by someone else between read and write
    propagated = models.JSONField(default=dict)  # {destination queue name: count}
    # Copy mode keeps failed messages at the source (no exception copy that a replay would
    # duplicate): the first reasons are kept here.
    errors = models.JSONField(default=list)
    done_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "aq_bulk_part"
        ordering = ["job", "part_no"]
        constraints = [
            models.UniqueConstraint(fields=["job", "part_no"], name="aq_bulk_part_unique"),
        ]

    def __str__(self) -> str:
        return f"part {self.part_no} of job {self.job_id}"


# --- Oracle-named status views (created by migration 0002; read-only) ----------------------------


class DbaPropagation(models.Model):
    propagation_id = models.BigIntegerField(primary_key=True)
    propagation_name = models.CharField(max_length=128)
    source_queue_owner = models.CharField(max_length=150)
    source_queue_name = models.CharField(max_length=128)
    destination_queue_owner = models.CharField(max_length=150)
    destination_queue_name = models.CharField(max_length=128)
    destination_dblink = models.CharField(max_length=128)
    rule_set_owner = models.CharField(max_length=150, null=True)
    rule_set_name = models.CharField(max_length=128, null=True)
    negative_rule_set_owner = models.CharField(max_length=150, null=True)
    negative_rule_set_name = models.CharField(max_length=128, null=True)
    queue_to_queue = models.CharField(max_length=5)
    status = models.CharField(max_length=8)
    error_message = models.TextField(null=True)
    error_date = models.DateTimeField(null=True)

    class Meta:
        managed = False
        db_table = "dba_propagation"
        ordering = ["propagation_name"]

    def __str__(self) -> str:
        return self.propagation_name


class DbaQueueSchedule(models.Model):
    schedule_id = models.BigIntegerField(primary_key=True)
    schema = models.CharField(max_length=150)
    qname = models.CharField(max_length=128)
    destination = models.CharField(max_length=300)
    message_delivery_mode = models.CharField(max_length=20)
    start_date = models.DateField()
    start_time = models.CharField(max_length=8)
    propagation_window = models.FloatField(null=True)
    next_time = models.CharField(max_length=200, null=True)
    latency = models.FloatField()
    schedule_disabled = models.CharField(max_length=1)
    process_name = models.CharField(max_length=255, null=True)
    session_id = models.IntegerField(null=True)
    instance = models.IntegerField(null=True)
    last_run_date = models.DateField(null=True)
    last_run_time = models.CharField(max_length=8, null=True)
    current_start_date = models.DateField(null=True)
    current_start_time = models.CharField(max_length=8, null=True)
    next_run_date = models.DateField(null=True)
    next_run_time = models.CharField(max_length=8, null=True)
    total_time = models.FloatField()
    total_number = models.BigIntegerField()
    total_bytes = models.BigIntegerField()
    max_number = models.BigIntegerField()
    max_bytes = models.BigIntegerField()
    avg_number = models.FloatField()
    avg_size = models.FloatField()
    avg_time = models.FloatField()
    failures = models.IntegerField()
    last_error_date = models.DateField(null=True)
    last_error_time = models.CharField(max_length=8, null=True)
    last_error_msg = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = "dba_queue_schedules"
        ordering = ["qname", "destination"]

    def __str__(self) -> str:
        return f"{self.qname} → {self.destination}"


class VPropagationSender(models.Model):
    propagation_id = models.BigIntegerField(primary_key=True)
    queue_id = models.BigIntegerField()
    queue_schema = models.CharField(max_length=150)
    queue_name = models.CharField(max_length=128)
    dst_queue_schema = models.CharField(max_length=150)
    dst_queue_name = models.CharField(max_length=128)
    dblink = models.CharField(max_length=300)
    schedule_status = models.CharField(max_length=20)
    high_water_mark = models.BigIntegerField(null=True)
    acknowledgement = models.BigIntegerField(null=True)
    total_msgs = models.BigIntegerField()
    total_bytes = models.BigIntegerField()
    elapsed_dequeue_time = models.FloatField()
    elapsed_rule_time = models.FloatField()
    elapsed_propagation_time = models.FloatField()
    # Messages the source still keeps for this destination's subscriber (not yet acknowledged
    # by it: §2.7), and when the oldest of them was enqueued / its age in seconds.
    unacknowledged = models.BigIntegerField()
    propagation_name = models.CharField(max_length=128)
    queue_to_queue = models.CharField(max_length=5)
    oldest_unacknowledged = models.DateTimeField(null=True)
    oldest_unacknowledged_age = models.FloatField(null=True)

    class Meta:
        managed = False
        db_table = "v_propagation_sender"
        ordering = ["queue_name", "dst_queue_name"]

    def __str__(self) -> str:
        return f"{self.queue_name} → {self.dst_queue_name}"


class VPropagationReceiver(models.Model):
    """Per (source site, stream, queue here): local propagations (SRC_DBNAME this site's global
    name) and arrivals from other sites' remote propagations (their global name; STREAM the
    propagation's name, or a queue-to-dblink job's SOURCE@LINK)."""

    receiver_id = models.CharField(max_length=32, primary_key=True)
    propagation_id = models.BigIntegerField(null=True)  # a local propagation only
    src_queue_name = models.CharField(max_length=128)
    src_dbname = models.CharField(max_length=255)
    dst_queue_name = models.CharField(max_length=128)
    total_msgs = models.BigIntegerField()
    total_bytes = models.BigIntegerField()
    elapsed_enqueue_time = models.FloatField()
    last_received = models.DateTimeField(null=True)
    stream = models.CharField(max_length=300)

    class Meta:
        managed = False
        db_table = "v_propagation_receiver"
        ordering = ["dst_queue_name", "src_queue_name"]

    def __str__(self) -> str:
        return f"{self.src_queue_name} → {self.dst_queue_name}"
