"""Logical queues and their partitions (the white paper's user-maintained queue_table_view),
written only by parallel.services. A partition's primary, secondary and active (owner) instance
are its queue table's, read through the selectors, never copied here."""

from __future__ import annotations

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
