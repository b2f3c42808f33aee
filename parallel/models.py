"""Logical queues and their partitions (the white paper's user-maintained queue_table_view),
written only by parallel.services. A partition's primary, secondary and active (owner) instance
are its queue table's, read through the selectors, never copied here."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from core.validators import name_validator


class LogicalQueue(models.Model):
    name = models.CharField(max_length=100, validators=[name_validator])
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "aq_logical_queue"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), name="aq_logical_queue_name_unique_ci"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("parallel:logicalqueue_detail", args=[self.pk])


class LogicalQueuePartition(models.Model):
    """One physical queue of a logical queue. PROTECT: a queue (or its queue table) that is a
    partition cannot be dropped on its own; the queues app's drop refuses naming this row."""

    logical_queue = models.ForeignKey(
        LogicalQueue, on_delete=models.CASCADE, related_name="partitions"
    )
    position = models.PositiveIntegerField()  # 1..N: the key hash maps onto it
    queue = models.OneToOneField(
        "queues.Queue", on_delete=models.PROTECT, related_name="logical_partition"
    )
    # Free text the administrator keeps up to date (the paper's "purpose of the queue").
    purpose = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "aq_logical_queue_partition"
        ordering = ["logical_queue", "position"]
        verbose_name = "partition of logical queue"
        constraints = [
            models.UniqueConstraint(
                fields=["logical_queue", "position"], name="aq_logical_partition_position_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.logical_queue.name} (partition {self.position}; drop the logical queue)"


class SessionMode(models.TextChoices):
    SERVER = "SERVER", "server mode"  # the instance is the answering process's AQ_INSTANCE_NAME
    FIXED = "FIXED", "fixed-client mode"  # the client names its instance


class LogicalQueueSession(models.Model):
    """One client session of a logical queue (the white paper's session): registered by its
    enqueue and dequeue calls through the API or parallel.client, counted while ``last_seen`` is
    within AQ_PARALLEL_SESSION_LEASE_S. Written only by parallel.services.

    ``partition_instance`` is where the kept partition was active when the session last used
    it: when the partition's active instance is no longer that one (failover, failback), the
    session's next call is told so (PartitionMoved) instead of silently moved."""

    id = models.UUIDField(primary_key=True)
    logical_queue = models.ForeignKey(
        LogicalQueue, on_delete=models.CASCADE, related_name="sessions"
    )
    mode = models.CharField(max_length=8, choices=SessionMode.choices)
    # The client's instance by name: a server-mode process may run on a host no worker reports.
    instance = models.CharField(max_length=64)
    partition = models.ForeignKey(
        LogicalQueuePartition, null=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    partition_instance = models.ForeignKey(
        "instances.Instance", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "aq_logical_queue_session"
        ordering = ["logical_queue", "created"]
        verbose_name = "client session of logical queue"

    def __str__(self) -> str:
        return f"{self.logical_queue.name} session {self.pk} ({self.mode}, {self.instance})"
