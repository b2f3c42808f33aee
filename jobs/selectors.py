"""Reads of the jobs app, shared by pages and API: propagations with their live state, runs,
workers, the dashboard's attention list, the topology graph and the trace of a message."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import (
    Case,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Extract, Greatest
from django.utils import timezone

from core.lookups import name_or_id_q
from jobs.choices import STATE_COLOURS, RunState, ScheduleState
from jobs.models import Maintenance, Propagation, PropagationRun, Worker
from queues.choices import MessageState, QueueKind
from queues.models import Message, Queue

RATE_WINDOW_S = 60


def maintenance() -> Maintenance:
    return Maintenance.objects.get_or_create(pk=1)[0]


def _state_expression(now: Any, restricted: bool) -> Case:
    """The operator's state of a propagation, in SQL so lists filter and sort by it."""
    stuck_before = now - timedelta(seconds=settings.AQ_PROPAGATION["STUCK_S"])
    running = Q(schedule__run__state=RunState.RUNNING)
    whens = [
        When(schedule__isnull=True, then=Value(ScheduleState.UNSCHEDULED)),
        When(enabled=False, then=Value(ScheduleState.STOPPED)),
        When(
            schedule__enabled=False,
            schedule__failures__gte=F("schedule__max_failures"),
            then=Value(ScheduleState.FAILED),
        ),
        When(schedule__enabled=False, then=Value(ScheduleState.DISABLED)),
        When(running & Q(schedule__run__heartbeat_at__lt=stuck_before), then=Value("stuck")),
        When(running & Q(schedule__run__waiting=False), then=Value(ScheduleState.RUNNING)),
        When(running, then=Value(ScheduleState.IDLE)),
        # A run created but not yet taken by a worker (all threads busy, or no worker).
        When(schedule__run__state=RunState.QUEUED, then=Value(ScheduleState.QUEUED)),
    ]
    if restricted:
        whens.append(When(schedule__run__isnull=True, then=Value(ScheduleState.RESTRICTED)))
    whens += [
        When(
            schedule__failures__gt=0,
            schedule__next_run_at__gt=now,
            then=Value(ScheduleState.BACKING_OFF),
        ),
        When(schedule__window_start__gt=now, then=Value(ScheduleState.WAITING)),
    ]
    return Case(*whens, default=Value(ScheduleState.IDLE), output_field=CharField())


# What the source still keeps for a propagation: its subscriber's consumer rows, counted on the
# (subscriber_id, message_id) index, less its copies parked in the exception queue (found from
# that queue's side, which is small). Joining every consumer row to aq_message took seconds at
# 100k messages behind.
_BACKLOG_SQL = """
(SELECT count(*) FROM aq_message_consumer mc WHERE mc.subscriber_id = jobs_propagation.subscriber_id)
- (SELECT count(*) FROM aq_message m
   JOIN aq_message_consumer mc ON mc.message_id = m.id
    AND mc.subscriber_id = jobs_propagation.subscriber_id
   WHERE m.state = 'EXPIRED' AND m.queue_id = (
       SELECT q.exception_queue_id FROM queues_queue q
       WHERE q.id = jobs_propagation.source_queue_id))
"""
# The enqueue time of the next message the propagation will take: the head of the source in
# dequeue order (aq_message_dequeue_v2), not a minimum over the whole backlog.
_OLDEST_SQL = """
(SELECT m.enq_time FROM aq_message m
 JOIN aq_message_consumer mc ON mc.message_id = m.id
  AND mc.subscriber_id = jobs_propagation.subscriber_id
 WHERE m.queue_id = jobs_propagation.source_queue_id AND m.state = 'READY'
   AND m.commit_seq IS NOT NULL
 ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT 1)
"""


def propagation_list() -> QuerySet[Propagation]:
    """Propagations with schedule, current run, state, backlog (messages the source still keeps
    for each propagation, and the oldest one's enqueue time) and the rate of the latest run, in
    one query whatever the page size."""
    now = timezone.now()
    # The latest started run, counted if seen in the last minute. Filtering on the heartbeat in
    # the WHERE would walk the whole history of a propagation with no recent run; the runs of a
    # propagation never overlap, so the latest started is also the latest seen.
    latest = PropagationRun.objects.filter(
        propagation=OuterRef("pk"), started_at__isnull=False
    ).order_by("-id")
    elapsed = Greatest(
        Extract(Coalesce("ended_at", "heartbeat_at") - F("started_at"), "epoch"), Value(1.0)
    )
    rate = latest.annotate(
        r=Case(
            When(
                heartbeat_at__gte=now - timedelta(seconds=RATE_WINDOW_S),
                then=ExpressionWrapper(F("propagated") / elapsed, output_field=FloatField()),
            ),
            default=Value(0.0),
            output_field=FloatField(),
        )
    ).values("r")[:1]
    return Propagation.objects.select_related(
        "source_queue",
        "destination_queue",
        "positive_rule_set",
        "negative_rule_set",
        "schedule",
        "schedule__run",
    ).annotate(
        state=_state_expression(now, maintenance().restricted),
        backlog=RawSQL(_BACKLOG_SQL, ()),
        oldest_backlog=RawSQL(_OLDEST_SQL, ()),
        rate=Coalesce(Subquery(rate), Value(0.0), output_field=FloatField()),
    )


def propagations_using_rule_set(rule_set_id: int) -> list[tuple[Propagation, str]]:
    """The propagations that use the rule set, each with the side it is on ("positive" or
    "negative"); a set on both sides of different propagations appears once per side."""
    out = []
    for prop in Propagation.objects.filter(
        Q(positive_rule_set_id=rule_set_id) | Q(negative_rule_set_id=rule_set_id)
    ).order_by("name"):
        if prop.positive_rule_set_id == rule_set_id:
            out.append((prop, "positive"))
        if prop.negative_rule_set_id == rule_set_id:
            out.append((prop, "negative"))
    return out


def propagation_get(pk_or_name: int | str) -> Propagation:
    qs = propagation_list()
    if (where := name_or_id_q(pk_or_name)) is None:
        raise qs.model.DoesNotExist(f"No such propagation: {pk_or_name!r}.")
    return qs.get(where)


def state_colour(state: str) -> str:
    return STATE_COLOURS.get(state, "secondary")


def run_list(*, propagation: Propagation | None = None) -> QuerySet[PropagationRun]:
    qs = PropagationRun.objects.select_related("propagation")
    return qs.filter(propagation=propagation) if propagation is not None else qs


def run_is_stuck(run: PropagationRun) -> bool:
    if run.state != RunState.RUNNING or run.heartbeat_at is None:
        return False
    limit = timedelta(seconds=settings.AQ_PROPAGATION["STUCK_S"])
    return timezone.now() - run.heartbeat_at > limit


def worker_list() -> list[dict[str, Any]]:
    """Workers from their heartbeats: alive or not, queues, pool, and the propagation runs each
    holds right now."""
    now = timezone.now()
    alive_after = now - timedelta(seconds=3 * settings.AQ_WORKER_HEARTBEAT_S)
    runs: dict[str, list[PropagationRun]] = {}
    for run in PropagationRun.objects.filter(state=RunState.RUNNING).select_related("propagation"):
        runs.setdefault(run.worker, []).append(run)
    out = []
    for w in Worker.objects.all():
        alive = w.stopped_at is None and w.last_seen >= alive_after
        out.append({"worker": w, "alive": alive, "runs": runs.get(w.hostname, [])})
    out.sort(key=lambda d: (not d["alive"], d["worker"].hostname))
    return out


def attention() -> dict[str, Any]:
    """What needs an operator first: failed and failing schedules, stuck runs, propagations
    falling behind, exception queues that hold messages, and maintenance mode."""
    props = list(propagation_list())
    now = timezone.now()
    failing = [
        p
        for p in props
        if p.state in (ScheduleState.FAILED, ScheduleState.BACKING_OFF)
        or (getattr(p, "schedule", None) is not None and p.schedule.failures > 0)
    ]
    stuck = [p for p in props if p.state == ScheduleState.STUCK]
    behind = []
    for p in props:
        if not p.backlog or p.oldest_backlog is None:
            continue
        latency = p.schedule.latency if getattr(p, "schedule", None) is not None else 3.0
        age = (now - p.oldest_backlog).total_seconds()
        if age > max(60.0, 10 * latency):
            behind.append({"propagation": p, "age": age})
    behind.sort(key=lambda d: -d["age"])
    disabled = [p for p in props if p.state in (ScheduleState.DISABLED, ScheduleState.STOPPED)]
    exq = (
        Queue.objects.filter(kind=QueueKind.EXCEPTION)
        .annotate(
            held=Count("messages", filter=Q(messages__state=MessageState.EXPIRED)),
        )
        .filter(held__gt=0)
        .order_by("-held")
    )
    return {
        "maintenance": maintenance(),
        "failing": failing,
        "stuck": stuck,
        "behind": behind,
        "disabled": disabled,
        "exception_queues": list(exq[:20]),
        "total": len(props),
    }


# --- topology graph ------------------------------------------------------------------------------


def topology(*, limit: int = 2000) -> dict[str, Any]:
    """Queues as nodes (with their READY depth), propagations as edges (state, rate, backlog)."""
    depth = dict(
        Message.objects.filter(state=MessageState.READY)
        .order_by()
        .values("queue")
        .annotate(n=Count("id"))
        .values_list("queue", "n")
    )
    # Remote propagations (QUEUE@LINK) join the graph with the sites (issue 14, not built yet).
    props = list(propagation_list().filter(destination_queue__isnull=False)[:limit])
    ids = {p.source_queue_id for p in props} | {p.destination_queue_id for p in props}
    queues = Queue.objects.filter(Q(pk__in=ids) | Q(kind=QueueKind.NORMAL)).select_related(
        "queue_table"
    )[:limit]
    nodes = [
        {
            "id": f"q{q.pk}",
            "name": q.name,
            "depth": depth.get(q.pk, 0),
            "table": q.queue_table.name,
            "kind": q.kind,
            "url": q.get_absolute_url() if hasattr(q, "get_absolute_url") else "",
        }
        for q in queues
    ]
    edges = [
        {
            "id": f"p{p.pk}",
            "name": p.name,
            "source": f"q{p.source_queue_id}",
            "target": f"q{p.destination_queue_id}",
            "state": p.state,
            "colour": state_colour(p.state),
            "rate": round(p.rate or 0, 1),
            "backlog": p.backlog,
            "url": p.get_absolute_url(),
        }
        for p in props
    ]
    return {"nodes": nodes, "edges": edges}


# --- trace a message -----------------------------------------------------------------------------


def trace(*, queue: Queue, message: Any, max_hops: int = 16) -> dict[str, Any]:
    """Where ``message`` (a rules-engine message) would go from ``queue``, hop by hop through
    the propagations and their rule sets, and which rule decides each hop. A dry run: nothing is
    enqueued. A queue reached twice on one path is reported as a cycle and not followed again."""
    from queues import engine
    from queues.services import raw_connection
    from rules.lang.pipeline import apply, message_to_json
    from rules.lang.transform import TransformationError
    from rules.selectors import rule_set_spec, rule_set_transformations

    hops: list[dict[str, Any]] = []
    by_source: dict[int, list[Propagation]] = {}
    # Hops across database links are not traced yet (issue 14): local propagations only.
    for p in propagation_list().filter(destination_queue__isnull=False):
        by_source.setdefault(p.source_queue_id, []).append(p)

    def walk(q_id: int, msg: Any, path: tuple[int, ...], depth: int) -> None:
        for p in by_source.get(q_id, []):
            hop: dict[str, Any] = {
                "depth": depth,
                "propagation": p.name,
                "propagation_id": p.pk,
                "source": p.source_queue.name,
                "destination": p.destination_queue.name,
                "destination_id": p.destination_queue_id,
                "state": p.state,
            }
            hops.append(hop)
            pos, neg = p.positive_rule_set, p.negative_rule_set
            try:
                res = apply(
                    msg,
                    positive=rule_set_spec(pos) if pos is not None else None,
                    negative=rule_set_spec(neg) if neg is not None else None,
                    transformations_for=rule_set_transformations(pos) if pos else {},
                )
            except TransformationError as exc:
                hop.update(decision="EXCEPTION", reason=str(exc), rule=None)
                continue
            hop.update(
                decision=res.action,
                reason=res.reason,
                rule=res.rule.name if res.rule is not None else None,
                rule_set=(
                    (neg.name if neg is not None else None)
                    if res.rule is not None and not res.perform
                    else (pos.name if pos is not None else None)
                ),
                steps=[{"kind": s.kind, "detail": s.detail} for s in res.steps],
                message_out=message_to_json(res.message_out) if res.perform else None,
            )
            if not res.perform:
                continue
            dest = engine.queue_info(raw_connection(), p.destination_queue_id)
            try:
                from jobs.runner import destination_copy

                engine.validate_message(
                    dest, destination_copy(_as_dequeued(msg), res.message_out, unchanged=False)
                )
            except engine.InvalidMessage as exc:
                hop.update(decision="EXCEPTION", reason=f"{dest.name} would refuse it: {exc}")
                continue
            if p.destination_queue_id in path:
                hop["cycle"] = True
                continue
            if depth + 1 >= max_hops:
                hop["truncated"] = True
                continue
            walk(
                p.destination_queue_id, res.message_out, (*path, p.destination_queue_id), depth + 1
            )

    walk(queue.pk, message, (queue.pk,), 0)
    reached = sorted({h["destination"] for h in hops if h.get("decision") == "PERFORM"})
    return {"queue": queue.name, "hops": hops, "reaches": reached}


def _as_dequeued(msg: Any) -> Any:
    """A stand-in for the engine's dequeued message, so the trace builds the destination copy
    exactly as a run does."""
    from queues import engine

    return engine.DequeuedMessage(
        id=0,
        queue_id=0,
        state="READY",
        priority=1,
        kind="USER",
        type_name="",
        correlation="",
        sender="",
        headers={},
        payload=None,
        enq_time=timezone.now(),
        attempts=0,
        position=engine.Position(0, 0, 0),
    )


def trace_message(*, message: Any = None, msgid: int | None = None) -> tuple[Any, Queue | None]:
    """What "trace a message" traces: the rules-engine message from pasted rules-message JSON
    (``message``, a dict or its text) or from a queued message (``msgid``), and the queue that
    holds the latter (None for a pasted one). Raises DomainError naming ``message.<field>`` or
    ``msgid``; the page's form and the API both call it."""
    from core.exceptions import DomainError
    from rules.lang import MessageError, message_from_queue
    from rules.selectors import message_for_test

    if msgid is None:
        return message_for_test(message), None
    row = Message.objects.select_related("queue").filter(pk=msgid).first()
    if row is None:
        raise DomainError(f"No queued message has id {msgid}.", field="msgid")
    try:
        return (
            message_from_queue(
                row.kind, row.type_name, row.payload, origin=row.origin_site, tag=row.tag
            ),
            row.queue,
        )
    except MessageError as exc:
        raise DomainError(
            f"Message {msgid} is not a message rules can read: {exc}", field="msgid"
        ) from exc


# --- Spark bulk jobs -----------------------------------------------------------------------------


def spark_job_cancel_requested(pk: int) -> bool:
    from jobs.models import SparkJob

    return SparkJob.objects.filter(pk=pk, cancel_requested=True).exists()


# The counters of a job are what its committed parts say (a part is written with its marker in
# one transaction), so a list shows committed work only, summed in SQL: one query per page.
def _spark_part_sum(column: str) -> Coalesce:
    from django.db.models import BigIntegerField, Sum

    from jobs.models import SparkJobPart

    total = (
        SparkJobPart.objects.filter(job=OuterRef("pk"))
        .order_by()
        .values("job")
        .annotate(s=Sum(column))
        .values("s")
    )
    return Coalesce(Subquery(total), Value(0), output_field=BigIntegerField())


_SPARK_PROPAGATED_SQL = """
(SELECT COALESCE(sum(e.value::bigint), 0) FROM aq_bulk_part p, jsonb_each_text(p.propagated) e
 WHERE p.job_id = jobs_sparkjob.id)
"""


def spark_job_list() -> QuerySet[Any]:
    """Spark jobs, newest first, with their source and destinations and the counters summed
    from their parts (read, discarded, exceptions, gone, propagated in all): a page costs the
    same number of queries whatever its size."""
    from django.db.models import BigIntegerField, Prefetch

    from jobs.models import SparkJob, SparkJobDestination

    return (
        SparkJob.objects.select_related("source_queue")
        .prefetch_related(
            Prefetch(
                "destinations",
                queryset=SparkJobDestination.objects.select_related("queue", "propagation"),
            )
        )
        .annotate(
            read=_spark_part_sum("read"),
            discarded=_spark_part_sum("discarded"),
            exceptions=_spark_part_sum("exceptions"),
            gone=_spark_part_sum("gone"),
            propagated_total=RawSQL(_SPARK_PROPAGATED_SQL, (), output_field=BigIntegerField()),
        )
    )


def spark_job_get(pk: int | str) -> Any:
    """One job as the list shows it (raises SparkJob.DoesNotExist)."""
    return spark_job_list().get(pk=int(pk))


def spark_job_counters(job: Any) -> dict[str, Any]:
    """What the job's committed parts add up to: read, discarded, exceptions, gone, the parts
    done, and propagated per destination queue name (every destination listed, in order, with 0
    until a part writes to it) and in all."""
    from django.db import connection
    from django.db.models import Count, Sum

    from jobs.models import SparkJobDestination, SparkJobPart

    sums = SparkJobPart.objects.filter(job=job).aggregate(
        read=Sum("read", default=0),
        discarded=Sum("discarded", default=0),
        exceptions=Sum("exceptions", default=0),
        gone=Sum("gone", default=0),
        parts_done=Count("id"),
    )
    with connection.cursor() as cur:
        cur.execute(
            "SELECT e.key, sum(e.value::bigint) FROM aq_bulk_part p, "
            "jsonb_each_text(p.propagated) e WHERE p.job_id = %s GROUP BY e.key",
            [job.pk],
        )
        by_name = {key: int(n) for key, n in cur.fetchall()}
    if "destinations" in getattr(job, "_prefetched_objects_cache", {}):
        names = [d.queue_name for d in job.destinations.all()]
    else:
        names = list(
            SparkJobDestination.objects.filter(job=job)
            .order_by("position")
            .values_list("queue_name", flat=True)
        )
    # Destinations in the job's order; a name no longer among them (a renamed queue) still counts.
    per_destination = {name: by_name.pop(name, 0) for name in names} | by_name
    return {
        **sums,
        "propagated": per_destination,
        "propagated_total": sum(per_destination.values()),
    }


def spark_job_parts(job: Any) -> QuerySet[Any]:
    """The job's committed parts, in part order."""
    from jobs.models import SparkJobPart

    return SparkJobPart.objects.filter(job=job).order_by("part_no")
