"""Instances: one row per instance name any worker reported (or a queue table named), written only
by instances.services; GV$INSTANCE is a view over it."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower

from instances.choices import InstanceStatus


class Instance(models.Model):
    """A node of the processing tier. ``alive_until`` is a lease: each heartbeat of one of its
    workers extends it by ``AQ_INSTANCE_HEARTBEAT_LIMIT_S`` on the database's clock, so every host
    and the views agree on UP/DOWN without comparing their own clocks."""

    # Oracle's INST_ID: small, stable, given on the first report (or mention) of the name.
    inst_id = models.AutoField(primary_key=True)
    name = models.CharField(max_length=64)
    host = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)  # start of the current UP period
    last_heartbeat = models.DateTimeField(null=True, blank=True)
    alive_until = models.DateTimeField(null=True, blank=True)
    # {worker hostname: last beat}: the workers seen within the limit, so a clean stop of the
    # last one takes the instance DOWN at once instead of at the end of its lease.
    workers = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "aq_instance"
        ordering = ["inst_id"]
        constraints = [
            models.UniqueConstraint(Lower("name"), name="aq_instance_name_unique_ci"),
        ]

    def __str__(self) -> str:
        return self.name


# --- Oracle-named status view (created by migration 0001; read-only) -----------------------------


class GvInstance(models.Model):
    """GV$INSTANCE: every instance of the cluster, UP while its lease runs."""

    inst_id = models.IntegerField(primary_key=True)
    instance_number = models.IntegerField()
    instance_name = models.CharField(max_length=64)
    host_name = models.CharField(max_length=255)
    startup_time = models.DateTimeField(null=True)
    last_heartbeat = models.DateTimeField(null=True)
    status = models.CharField(max_length=8, choices=InstanceStatus.choices)
    workers = models.IntegerField()

    class Meta:
        managed = False
        db_table = "gv_instance"
        ordering = ["inst_id"]

    def __str__(self) -> str:
        return self.instance_name
