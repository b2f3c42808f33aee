"""Reads of the parallel app, shared by the pages and the API: the logical queues, their mapping
(the white paper's queue_table_view: partition, queue, primary, secondary and active instance,
purpose) and the balance view (spec §5.6 items 8 and 9)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from instances.choices import InstanceStatus
from instances.models import Instance
from instances.selectors import up_expression
from monitoring.choices import RateRange, SeriesKind
from monitoring.selectors import rates_get
from parallel.models import LogicalQueue, LogicalQueuePartition, LogicalQueueSession
from queues import selectors as queue_selectors

_QT = "queue__queue_table__"


def logical_queue_list() -> QuerySet[LogicalQueue]:
    return LogicalQueue.objects.annotate(partition_count=Count("partitions")).order_by("name")


def logical_queue_get(pk_or_name: int | str) -> LogicalQueue:
    qs = logical_queue_list()
    if isinstance(pk_or_name, int) or str(pk_or_name).isdigit():
        return qs.get(pk=int(pk_or_name))
    return qs.get(name__iexact=pk_or_name)


def partition_list() -> QuerySet[LogicalQueuePartition]:
    """The mapping rows with each partition's queue table instances (names and UP/DOWN): the
    primary and secondary set on the queue table, the active one its owner now."""
    return (
        LogicalQueuePartition.objects.select_related(
            "logical_queue",
            "queue__queue_table__primary_instance",
            "queue__queue_table__secondary_instance",
            "queue__queue_table__owner_instance",
        )
        .annotate(
            primary_status=up_expression(f"{_QT}primary_instance__"),
            secondary_status=up_expression(f"{_QT}secondary_instance__"),
            active_status=up_expression(f"{_QT}owner_instance__"),
        )
        .order_by("logical_queue__name", "position")
    )


def logical_queue_warnings(lq: LogicalQueue) -> list[str]:
    """The queue tables' instance warnings (an instance no worker ever reported, or one that is
    down), once each."""
    tables = queue_selectors.queue_table_list().filter(queues__logical_partition__logical_queue=lq)
    out: list[str] = []
    for qt in tables:
        for warning in queue_selectors.queue_table_instance_warnings(qt):
            if warning not in out:
                out.append(warning)
    return out


def session_counts(lq: LogicalQueue) -> list[tuple[str, int | None, int]]:
    """(client instance, kept partition id, sessions) over the sessions of ``lq`` that made a
    call within AQ_PARALLEL_SESSION_LEASE_S: the clients of the balance view."""
    since = timezone.now() - timedelta(seconds=float(settings.AQ_PARALLEL_SESSION_LEASE_S))
    rows = (
        LogicalQueueSession.objects.filter(logical_queue=lq, last_seen__gte=since)
        .values("instance", "partition_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(r["instance"], r["partition_id"], r["n"]) for r in rows]


def _last(values: list[float | None]) -> float | None:
    return next((v for v in reversed(values) if v is not None), None)


def logical_queue_balance(lq: LogicalQueue, *, instance: str | None = None) -> dict[str, Any]:
    """Per partition: depth (ready and waiting messages), the engine's enqueue and dequeue
    counters and their latest rates from the monitoring app's samples (None before two samples
    exist) and its clients (sessions keeping it), plus the max/min depth ratio against AQ_PARALLEL_BALANCE_RATIO, the per-instance
    totals and the "least-loaded queue on this instance" of S003's query (the partition active
    on ``instance``, default this process's, with the fewest messages enqueued). Clients are the
    sessions seen within AQ_PARALLEL_SESSION_LEASE_S, per partition they keep and per instance
    they are on (server mode: the process's; fixed-client mode: the one they name). Like Oracle's
    GV$ views these are estimates: counters and depths read at slightly different moments."""
    parts = list(partition_list().filter(logical_queue=lq))
    queues = {
        q.pk: q for q in queue_selectors.queue_list().filter(pk__in=[p.queue_id for p in parts])
    }
    counts = session_counts(lq)
    per_partition: dict[int | None, int] = {}
    per_client_instance: dict[str, int] = {}
    for inst, part_id, n in counts:
        per_partition[part_id] = per_partition.get(part_id, 0) + n
        per_client_instance[inst.lower()] = per_client_instance.get(inst.lower(), 0) + n
    rows = []
    for p in parts:
        q = queues[p.queue_id]
        rates = rates_get(kind=SeriesKind.QUEUE, object_id=p.queue_id, range_=RateRange.TEN_MINUTES)
        qt = p.queue.queue_table
        rows.append(
            {
                "position": p.position,
                "partition_id": p.pk,
                "queue": q.name,
                "queue_id": q.pk,
                "queue_table": qt.name,
                "primary_instance": qt.primary_instance.name if qt.primary_instance else None,
                "secondary_instance": qt.secondary_instance.name if qt.secondary_instance else None,
                "active_instance": qt.owner_instance.name if qt.owner_instance else None,
                "active_status": p.active_status if qt.owner_instance else InstanceStatus.DOWN,
                "purpose": p.purpose,
                "depth": q.depth_ready + q.depth_waiting,
                "enqueued": q.enqueued,
                "dequeued": q.dequeued,
                "enqueue_rate": _last(rates["series"]["enqueue_rate"]),
                "dequeue_rate": _last(rates["series"]["dequeue_rate"]),
                "clients": per_partition.get(p.pk, 0),
            }
        )
    depths = [r["depth"] for r in rows]
    top, low = (max(depths), min(depths)) if depths else (0, 0)
    # Empty partitions are balanced; one empty beside a non-empty one is not (no finite ratio).
    ratio = 1.0 if top == 0 else (top / low if low else None)
    limit = float(settings.AQ_PARALLEL_BALANCE_RATIO)
    here = (instance or settings.AQ_INSTANCE_NAME).strip()
    mine = [r for r in rows if (r["active_instance"] or "").lower() == here.lower()]
    least = min(mine, key=lambda r: (r["enqueued"], r["position"])) if mine else None
    per_instance: dict[str, dict[str, Any]] = {}
    for r in rows:
        name = r["active_instance"] or "(none)"
        agg = per_instance.setdefault(
            name.lower(),
            {
                "instance": name,
                "status": r["active_status"],
                "partitions": 0,
                "depth": 0,
                "clients": per_client_instance.get(name.lower(), 0),
            },
        )
        agg["partitions"] += 1
        agg["depth"] += r["depth"]
    # Clients on an instance that serves no partition now (failed over, not moved yet).
    for inst, n in sorted(per_client_instance.items()):
        if inst not in per_instance:
            status = (
                InstanceStatus.UP
                if Instance.objects.filter(name__iexact=inst, alive_until__gt=Now()).exists()
                else InstanceStatus.DOWN
            )
            per_instance[inst] = {
                "instance": next(c[0] for c in counts if c[0].lower() == inst),
                "status": status,
                "partitions": 0,
                "depth": 0,
                "clients": n,
            }
    return {
        "logical_queue": lq.name,
        "estimates": True,
        "partitions": rows,
        "depth_max": top,
        "depth_min": low,
        "max_min_ratio": ratio,
        "ratio_limit": limit,
        "balanced": ratio is not None and ratio <= limit,
        "instance": here,
        "least_loaded_queue": least["queue"] if least else None,
        "per_instance": sorted(per_instance.values(), key=lambda a: a["instance"].lower()),
        "clients": sum(n for _i, _p, n in counts),
        "session_lease_s": float(settings.AQ_PARALLEL_SESSION_LEASE_S),
    }
