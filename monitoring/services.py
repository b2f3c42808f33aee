"""Writes of the monitoring app: the rate sampler, the only writer of monitoring_ratesample.

One pass (``rates_sample``, run by beat every AQ_RATES["INTERVAL_S"]): read the counters the
engine, the propagation runner and the gateway agents keep (monitoring.selectors), write one
finest-tier point per series, roll each closed bucket of a tier up into the next coarser tier
(its last point), and delete what is older than each tier keeps. A constant number of
statements whatever the number of series (the points are written in batches)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from gateway.choices import Direction
from monitoring import selectors
from monitoring.choices import SeriesKind
from monitoring.models import VALUE_FIELDS, RateSample

# pg_try_advisory_xact_lock key: one sampler at a time (a second beat, a manual run) skips.
_LOCK_KEY = 0x52415445  # "RATE"
_BATCH = 2000


@dataclass
class SampleReport:
    at: datetime
    skipped: bool = False
    points: int = 0
    rolled_up: dict[int, int] = field(default_factory=dict)  # tier resolution → points
    deleted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "skipped": self.skipped,
            "points": self.points,
            "rolled_up": self.rolled_up,
            "deleted": self.deleted,
        }


def tiers() -> tuple[tuple[int, int], ...]:
    return tuple((int(res), int(keep)) for res, keep in settings.AQ_RATES["TIERS"])


def bucket_start(at: datetime, resolution: int) -> datetime:
    epoch = int(at.timestamp())
    return datetime.fromtimestamp(epoch - epoch % resolution, tz=UTC)


def _points(snapshot: selectors.Snapshot) -> list[dict[str, Any]]:
    """One row of values per series, from the snapshot's counters."""
    out: list[dict[str, Any]] = []
    for q in snapshot.queues:
        depth = selectors.queue_depth(q)
        out.append(
            {
                "kind": SeriesKind.QUEUE,
                "object_id": q["pk"],
                "enqueued": q["enqueued"],
                "dequeued": q["dequeued"],
                "depth": depth,
            }
        )
    for p in snapshot.propagations:
        out.append(
            {
                "kind": SeriesKind.PROPAGATION,
                "object_id": p["pk"],
                "propagated": p["propagated"],
                "backlog": p["backlog"] or 0,
            }
        )
    for j in snapshot.gateway_jobs:
        out.append(
            {
                "kind": SeriesKind.GATEWAY_JOB,
                "object_id": j["job_id"],
                "propagated": j["propagated_msgs"],
                "exceptions": j["exceptionq_msgs"],
                "backlog": j["backlog"],
            }
        )
    jobs_by = {d: 0 for d in Direction.values}
    for j in snapshot.gateway_jobs:
        jobs_by[j["propagation_type"]] += j["propagated_msgs"]
    out.append(
        {
            "kind": SeriesKind.GLOBAL,
            "object_id": 0,
            "enqueued": sum(q["enqueued"] for q in snapshot.queues),
            "dequeued": sum(q["dequeued"] for q in snapshot.queues),
            "propagated": sum(p["propagated"] for p in snapshot.propagations),
            "inbound": jobs_by[Direction.INBOUND],
            "outbound": jobs_by[Direction.OUTBOUND],
        }
    )
    return out


_COLUMNS = ", ".join(VALUE_FIELDS)
_EXCLUDED = ", ".join(f"{c} = EXCLUDED.{c}" for c in ("sampled_at", *VALUE_FIELDS))
# The last point of each closed bucket of the finer tier, from the first bucket the coarser
# tier does not have yet (so a beat that was away for a while still rolls up what it left).
_ROLLUP_SQL = f"""
INSERT INTO monitoring_ratesample
    (kind, object_id, resolution, bucket, sampled_at, {_COLUMNS})
SELECT DISTINCT ON (kind, object_id, b)
       kind, object_id, %(res)s, b, sampled_at, {_COLUMNS}
FROM (
    SELECT s.*, to_timestamp(floor(extract(epoch FROM s.bucket) / %(res)s) * %(res)s) AS b
    FROM monitoring_ratesample s
    WHERE s.resolution = %(finer)s AND s.bucket < %(closed_before)s
      AND s.bucket >= coalesce(
          (SELECT max(c.bucket) FROM monitoring_ratesample c WHERE c.resolution = %(res)s)
              + make_interval(secs => %(res)s),
          '-infinity')
) f
ORDER BY kind, object_id, b, sampled_at DESC
ON CONFLICT (kind, object_id, resolution, bucket) DO UPDATE SET {_EXCLUDED}
"""


def rates_sample(*, at: datetime | None = None) -> SampleReport:
    """Take one sample at ``at`` (default now; tests pass controlled times, which must not go
    backwards), roll closed buckets up a tier, delete points past each tier's retention."""
    at = at or timezone.now()
    report = SampleReport(at=at)
    levels = tiers()
    finest = levels[0][0]
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [_LOCK_KEY])
            if not cur.fetchone()[0]:
                report.skipped = True
                return report
        bucket = bucket_start(at, finest)
        rows = [
            RateSample(resolution=finest, bucket=bucket, sampled_at=at, **values)
            for values in _points(selectors.counters_snapshot())
        ]
        # A second sample in the same bucket replaces the first: a point is the bucket's last.
        RateSample.objects.bulk_create(
            rows,
            batch_size=_BATCH,
            update_conflicts=True,
            unique_fields=["kind", "object_id", "resolution", "bucket"],
            update_fields=["sampled_at", *VALUE_FIELDS],
        )
        report.points = len(rows)
        with connection.cursor() as cur:
            for (finer, _), (res, _) in itertools.pairwise(levels):
                closed_before = bucket_start(at, res)
                cur.execute(
                    _ROLLUP_SQL, {"res": res, "finer": finer, "closed_before": closed_before}
                )
                report.rolled_up[res] = cur.rowcount
            where = " OR ".join("(resolution = %s AND bucket < %s)" for _ in levels)
            params: list[Any] = []
            for res, keep in levels:
                params += [res, at - timedelta(seconds=keep)]
            cur.execute(f"DELETE FROM monitoring_ratesample WHERE {where}", params)
            report.deleted = cur.rowcount
    return report
