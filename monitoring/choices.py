from django.db import models


class SeriesKind(models.TextChoices):
    """What a rate series is about; the object is named ``kind:id`` (``global`` alone)."""

    GLOBAL = "global", "Whole console"
    QUEUE = "queue", "Queue"
    PROPAGATION = "propagation", "Propagation"
    GATEWAY_JOB = "gateway_job", "Gateway job"


class RateRange(models.TextChoices):
    """How far back a rates read looks; each range reads one tier of settings.AQ_RATES (the
    finest, the middle, the coarsest), whose retention it is."""

    TEN_MINUTES = "10m", "10 minutes"
    ONE_HOUR = "1h", "1 hour"
    ONE_DAY = "1d", "1 day"


RANGE_TIER = {RateRange.TEN_MINUTES: 0, RateRange.ONE_HOUR: 1, RateRange.ONE_DAY: 2}

# The counters (rates are computed from them) and gauges each kind's series holds, by column;
# a counter of several columns is their sum.
COUNTERS: dict[str, dict[str, str | tuple[str, ...]]] = {
    SeriesKind.GLOBAL: {
        "enqueue_rate": "enqueued",
        "dequeue_rate": "dequeued",
        "propagate_rate": "propagated",
        "gateway_in_rate": "inbound",
        "gateway_out_rate": "outbound",
    },
    SeriesKind.QUEUE: {"enqueue_rate": "enqueued", "dequeue_rate": "dequeued"},
    SeriesKind.PROPAGATION: {"propagate_rate": "propagated"},
    # In: what the job took from its source, delivered or moved to its exception queue; out:
    # what it delivered to its destination.
    SeriesKind.GATEWAY_JOB: {"in_rate": ("propagated", "exceptions"), "out_rate": "propagated"},
}
GAUGES: dict[str, dict[str, str]] = {
    SeriesKind.GLOBAL: {},
    SeriesKind.QUEUE: {"depth": "depth"},
    SeriesKind.PROPAGATION: {"backlog": "backlog"},
    SeriesKind.GATEWAY_JOB: {"backlog": "backlog"},  # null for INBOUND (a foreign source)
}


def counter_columns(column: str | tuple[str, ...]) -> tuple[str, ...]:
    return (column,) if isinstance(column, str) else column
