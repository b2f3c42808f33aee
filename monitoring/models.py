from django.db import models

from monitoring.choices import SeriesKind


class RateSample(models.Model):
    """One tier's point of one series: the counters and gauges as read at ``sampled_at``, the
    last read inside the tier's bucket. Rates are computed on read from consecutive points
    (counters, not rates, are stored: a coarser tier is just the last point of each bucket, and
    a counter reset is seen as one). Written only by monitoring.services; ``object_id`` is not a
    foreign key: a dropped queue's points age out with the rest."""

    kind = models.CharField(max_length=16, choices=SeriesKind.choices)
    object_id = models.BigIntegerField(default=0)  # 0 for the global series
    resolution = models.PositiveIntegerField(help_text="The tier: seconds per point.")
    bucket = models.DateTimeField(help_text="Start of the tier's bucket the point stands for.")
    sampled_at = models.DateTimeField()
    enqueued = models.BigIntegerField(null=True)
    dequeued = models.BigIntegerField(null=True)
    propagated = models.BigIntegerField(null=True)
    inbound = models.BigIntegerField(null=True)  # gateway INBOUND jobs (global series)
    outbound = models.BigIntegerField(null=True)  # gateway OUTBOUND jobs (global series)
    exceptions = models.BigIntegerField(null=True)  # a gateway job's MGW_JOBS.EXCEPTIONQ_MSGS
    depth = models.BigIntegerField(null=True)
    backlog = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "object_id", "resolution", "bucket"],
                name="monitoring_ratesample_point",
            )
        ]
        indexes = [
            # Pruning and the rollup's "last bucket done" read a tier by time.
            models.Index(fields=["resolution", "bucket"], name="monitoring_rate_tier_time"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.object_id} @{self.bucket:%H:%M:%S}/{self.resolution}s"


# The columns a point carries, in one place for the sampler's upsert and the rollup's SQL.
VALUE_FIELDS = (
    "enqueued",
    "dequeued",
    "propagated",
    "inbound",
    "outbound",
    "exceptions",
    "depth",
    "backlog",
)
