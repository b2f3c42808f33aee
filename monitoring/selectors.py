"""Reads of the monitoring app: one snapshot of the counters and states the other apps already
keep, read through their selectors and Oracle-named views, in a constant number of queries
whatever the number of queues, propagations or jobs (the /metrics collector and the rate
sampler both read it)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from core.lookups import name_or_id_q
from gateway import selectors as gateway_selectors
from gateway.models import Job, MgwGateway, MgwJob
from jobs import selectors as job_selectors
from jobs.choices import SparkJobState
from jobs.models import Propagation, SparkJob, VPropagationSender
from monitoring.choices import COUNTERS, GAUGES, RANGE_TIER, SeriesKind, counter_columns
from monitoring.models import RateSample
from queues import selectors as queue_selectors
from queues.choices import MessageState
from queues.models import Queue


@dataclass(frozen=True)
class Snapshot:
    """Rows as plain dicts (``values()``): no model instances, no lazy relation reads."""

    queues: list[dict[str, Any]] = field(default_factory=list)
    propagations: list[dict[str, Any]] = field(default_factory=list)
    gateway_jobs: list[dict[str, Any]] = field(default_factory=list)


DEPTH_FIELDS = {state: f"depth_{state.lower()}" for state in MessageState.values}
# A queue's depth: what a consumer may still get, the ready messages and those in their delay.
PENDING_STATES = (MessageState.READY, MessageState.WAITING)


def queue_counters() -> list[dict[str, Any]]:
    """Per queue: id, name, queue table, depth per message state and the engine's enqueue and
    dequeue counters (queues.selectors.queue_counters_all: three queries)."""
    return queue_selectors.queue_counters_all()


def propagation_counters() -> list[dict[str, Any]]:
    """Per propagation: the operator's state, backlog and its oldest message, consecutive
    failures (jobs.selectors.propagation_list) and the messages propagated so far, the live run
    included (V$PROPAGATION_SENDER.TOTAL_MSGS). Three queries (the list reads the maintenance
    row)."""
    totals = dict(VPropagationSender.objects.values_list("propagation_id", "total_msgs"))
    rows = list(
        job_selectors.propagation_list()
        .order_by("pk")
        .values(
            "pk",
            "name",
            "source_queue__name",
            "destination_queue__name",
            "destination_remote_queue",
            "destination_dblink",
            "state",
            "backlog",
            "oldest_backlog",
            "schedule__failures",
        )
    )
    for row in rows:
        row["propagated"] = totals.get(row["pk"], 0)
        remote = row["destination_remote_queue"]
        row["destination"] = (
            f"{remote}@{row['destination_dblink']}" if remote else row["destination_queue__name"]
        )
    return rows


def gateway_job_counters() -> list[dict[str, Any]]:
    """Per gateway job: MGW_JOBS's direction, status, counters and failures (one query)."""
    return list(
        MgwJob.objects.order_by("job_id").values(
            "job_id",
            "job_name",
            "propagation_type",
            "agent_name",
            "link_name",
            "status",
            "enabled",
            "propagated_msgs",
            "exceptionq_msgs",
            "failures",
        )
    )


def gateway_agents() -> list[dict[str, Any]]:
    """Per agent: MGW_GATEWAY's status and ping (one query; the ping is computed in the view)."""
    return list(
        MgwGateway.objects.order_by("agent_name").values("agent_name", "agent_status", "agent_ping")
    )


def spark_jobs_by_state() -> dict[str, int]:
    """Spark bulk jobs per state, every state present (zeros included): one query."""
    counts = dict(
        SparkJob.objects.order_by()
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    return {state: counts.get(state, 0) for state in SparkJobState.values}


def worker_liveness() -> list[dict[str, Any]]:
    """Celery workers from their heartbeats (jobs.selectors.worker_list: two queries)."""
    return [
        {
            "hostname": w["worker"].hostname,
            "alive": w["alive"],
            "last_seen": w["worker"].last_seen,
            "processed": w["worker"].processed,
            "runs": len(w["runs"]),
        }
        for w in job_selectors.worker_list()
    ]


def queue_depth(row: dict[str, Any]) -> int:
    """A queue_counters row's depth: what a consumer may still get (READY + WAITING)."""
    return sum(row[DEPTH_FIELDS[s]] for s in PENDING_STATES)


def counters_snapshot() -> Snapshot:
    """The counters the rate sampler keeps: queues, propagations, gateway jobs with each
    OUTBOUND job's backlog (``backlog``, None for INBOUND): eight queries."""
    queues = queue_counters()
    jobs = gateway_job_counters()
    backlogs = gateway_selectors.outbound_backlogs({q["pk"]: queue_depth(q) for q in queues})
    for j in jobs:
        j["backlog"] = backlogs.get(j["job_id"])
    return Snapshot(queues=queues, propagations=propagation_counters(), gateway_jobs=jobs)


# --- message rates (the sampled series, monitoring.services) ------------------------------------

SERIES_MODELS = {
    SeriesKind.QUEUE: Queue,
    SeriesKind.PROPAGATION: Propagation,
    SeriesKind.GATEWAY_JOB: Job,
}


def series_object(kind: str, key: str) -> Any:
    """The queue, propagation or gateway job a series is about, by id or case-insensitive
    name; DoesNotExist when there is none."""
    model = SERIES_MODELS[kind]  # type: ignore[index]
    if (where := name_or_id_q(key)) is None:
        raise model.DoesNotExist(f"No such {kind}: {key!r}.")
    return model.objects.get(where)


def rates_get(
    *, kind: str, object_id: int, range_: str, now: datetime | None = None
) -> dict[str, Any]:
    """A series over ``range_`` from its tier: point times (Unix seconds, when each was read)
    and, per series name, a value per point: rates (per second) from the counters' change
    since the point before (a counter that went down was reset: its new value is the change),
    gauges as read. The first point of the range only serves as the base of the second's
    rates."""
    now = now or timezone.now()
    resolution, keep = settings.AQ_RATES["TIERS"][RANGE_TIER[range_]]  # type: ignore[index]
    points = list(
        RateSample.objects.filter(
            kind=kind,
            object_id=object_id,
            resolution=resolution,
            bucket__gte=now - timedelta(seconds=keep),
        )
        .order_by("sampled_at")
        .values(
            "sampled_at",
            *{c for col in COUNTERS[kind].values() for c in counter_columns(col)},
            *GAUGES[kind].values(),
        )
    )
    times: list[float] = []
    series: dict[str, list[float | None]] = {
        name: []
        for name in (*COUNTERS[kind], *GAUGES[kind])  # type: ignore[index]
    }
    for before, point in itertools.pairwise(points):
        dt = (point["sampled_at"] - before["sampled_at"]).total_seconds()
        times.append(point["sampled_at"].timestamp())
        for name, column in COUNTERS[kind].items():
            cols = counter_columns(column)
            if dt <= 0 or any(point[c] is None or before[c] is None for c in cols):
                series[name].append(None)
                continue
            now_v, then_v = sum(point[c] for c in cols), sum(before[c] for c in cols)
            delta = now_v - then_v if now_v >= then_v else now_v
            series[name].append(delta / dt)
        for name, column in GAUGES[kind].items():  # type: ignore[index]
            series[name].append(point[column])
    return {"resolution": resolution, "timestamps": times, "series": series}
