"""Reads of the jobs app, shared by pages and API: propagations with their live state, runs,
workers, the dashboard's attention list, the topology graph and the trace of a message."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
from django.conf import settings
from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    DurationField,
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
from jobs.models import Maintenance, Propagation, PropagationRun, PropagationSchedule, Worker
from queues.choices import MessageState, QueueKind
from queues.models import Message, Queue
from queues.selectors import subscriber_backlog_sql

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


# What the source still keeps for a propagation (its subscriber's consumer rows, less its copies
# parked in the exception queue) and the enqueue time of the next message it will take: PL/pgSQL
# functions (jobs migration 0011), so that the list's plan does not cover every queue table's
# message storage (0.4 s of planning per read at 100 queue tables).
_PROPAGATION_ARGS = "(jobs_propagation.subscriber_id, jobs_propagation.source_queue_id)"
_BACKLOG_SQL = subscriber_backlog_sql("jobs_propagation")
_OLDEST_SQL = "aq_propagation_oldest" + _PROPAGATION_ARGS


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


# Propagations per list of the dashboard's "needs attention" (the propagation list, filtered by
# state, has the rest): a list of every propagation is no help to an operator at 2,000.
ATTENTION_LIMIT = 50


def _late_before(now: Any) -> ExpressionWrapper:
    """Messages enqueued before this are late: a propagation is falling behind when its oldest
    message waits longer than ``max(60 s, 10 * latency)``, counted up to now while its window is
    open or overdue, but only up to the end of its last run while it waits for its next window
    (a backlog gathered since then is the schedule working as set, not a propagation that cannot
    keep up). Waiting with no run yet: never late (NULL)."""
    latency = Coalesce(F("schedule__latency"), Value(3.0))
    allowed = ExpressionWrapper(
        Greatest(Value(60.0), latency * Value(10.0)) * Value(timedelta(seconds=1)),
        output_field=DurationField(),
    )
    window_open = (
        Q(schedule__isnull=True)
        | Q(schedule__window_start__isnull=True)
        | Q(schedule__window_start__lte=now)
    )
    counted_to = Case(
        When(window_open, then=Value(now)),
        default=F("schedule__last_run_at"),
        output_field=DateTimeField(),
    )
    return ExpressionWrapper(counted_to - allowed, output_field=DateTimeField())


def attention(*, limit: int = ATTENTION_LIMIT) -> dict[str, Any]:
    """What needs an operator first: failed and failing schedules, stuck runs, propagations
    falling behind, exception queues that hold messages, and maintenance mode. Each list is
    filtered in SQL and holds at most ``limit`` propagations; ``truncated`` names those that
    have more."""
    props = propagation_list()
    now = timezone.now()
    failing_q = Q(state__in=(ScheduleState.FAILED, ScheduleState.BACKING_OFF)) | Q(
        schedule__failures__gt=0
    )
    failing = list(props.filter(failing_q)[: limit + 1])
    stuck = list(props.filter(state=ScheduleState.STUCK)[: limit + 1])
    disabled_states = (ScheduleState.DISABLED, ScheduleState.STOPPED)
    disabled = list(props.filter(state__in=disabled_states)[: limit + 1])
    # A backlog is only possible where the source's queue table holds messages: one grouped
    # read of the message storage (as the dashboard's counts do) spares the backlog function
    # for every propagation whose source's table is empty (2,000 calls, 0.2 s, when all are).
    holding = Message.objects.order_by().values_list("queue_table_id", flat=True).distinct()
    candidates = props.filter(source_queue__queue_table_id__in=list(holding))
    behind = [
        {"propagation": p, "age": (now - p.oldest_backlog).total_seconds()}
        for p in candidates.filter(backlog__gt=0)
        .annotate(late_before=_late_before(now))
        .filter(oldest_backlog__lt=F("late_before"))
        .order_by("oldest_backlog", "name")[: limit + 1]
    ]
    lists = {"failing": failing, "stuck": stuck, "behind": behind, "disabled": disabled}
    truncated = [name for name, rows in lists.items() if len(rows) > limit]
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
        **{name: rows[:limit] for name, rows in lists.items()},
        "truncated": truncated,
        "limit": limit,
        "exception_queues": list(exq[:20]),
        "total": Propagation.objects.count(),
    }


# --- topology graph ------------------------------------------------------------------------------


def topology(*, limit: int = 2000, q: str = "") -> dict[str, Any]:
    """Queues as nodes (with their READY depth), propagations as edges (state, rate, backlog).

    ``q`` narrows the graph to the queues whose name contains it, the propagations from or to
    them and those propagations' other ends: the whole graph stops at ``limit`` nodes, so at
    10,000 queues a name filter must be the server's to find a queue past the first ``limit``.

    With database links, sites are groups: this site's queues, and per linked site (by global
    name) a node for each ``QUEUE@LINK`` a propagation here names, plus what that site's own
    propagations do from there (read through the link, :mod:`sites.remote_topology`), including
    propagations back to this site. A site that cannot be read shows as unreachable with the
    link's words. Edges on a cycle (A → B → A) carry ``cycle``; ``cycles`` lists them.

    Gateway links are groups of their foreign queues (``NAME@LINK`` nodes, kind ``FOREIGN``),
    gateway jobs edges between a queue here and a foreign queue (kind ``gateway_job``, in the
    job's direction). With more than one instance, this site's queues sit in groups of their
    queue table's owner instance (inside this site's group when there are sites). The number of
    queries does not grow with the number of queues, propagations, links, jobs or instances."""
    from gateway import selectors as gateway_selectors
    from instances.selectors import instance_list
    from sites.selectors import local_global_name

    q = (q or "").strip()
    props_qs = propagation_list()
    if q:
        props_qs = props_qs.filter(
            Q(source_queue__name__icontains=q) | Q(destination_queue__name__icontains=q)
        )
    props = list(props_qs[:limit])
    links, foreign, jobs = gateway_selectors.topology_parts(limit=limit, q=q)
    ids = {p.source_queue_id for p in props} | {
        p.destination_queue_id for p in props if p.destination_queue_id is not None
    }
    ids |= {j.source_queue_id or j.destination_queue_id for j in jobs}
    wanted = Q(name__icontains=q) if q else Q(kind=QueueKind.NORMAL)
    queues = list(
        Queue.objects.filter(Q(pk__in=ids) | wanted).select_related("queue_table__owner_instance")[
            :limit
        ]
    )
    messages = Message.objects.filter(state__in=[MessageState.READY, MessageState.WAITING])
    if q:  # the filtered graph's own queues, not a count over every queue's messages
        messages = messages.filter(queue__in=[queue.pk for queue in queues])
    depth: dict[int, int] = {}
    held: dict[int, int] = {}  # READY + WAITING: what an outbound job's source keeps for it
    for queue_id, ready, waiting in (
        messages.order_by()
        .values("queue")
        .annotate(
            ready=Count("id", filter=Q(state=MessageState.READY)),
            waiting=Count("id", filter=Q(state=MessageState.WAITING)),
        )
        .values_list("queue", "ready", "waiting")
    ):
        depth[queue_id] = ready
        held[queue_id] = ready + waiting
    nodes = [
        {
            "id": f"q{queue.pk}",
            "name": queue.name,
            "depth": depth.get(queue.pk, 0),
            "table": queue.queue_table.name,
            "kind": queue.kind,
            "url": queue.get_absolute_url() if hasattr(queue, "get_absolute_url") else "",
            "instance": (
                queue.queue_table.owner_instance.name if queue.queue_table.owner_instance else ""
            ),
        }
        for queue in queues
    ]
    edges = [
        {
            "id": f"p{p.pk}",
            "kind": EDGE_PROPAGATION,
            "name": p.name,
            "source": f"q{p.source_queue_id}",
            "target": f"q{p.destination_queue_id}" if not p.is_remote else "",
            "state": p.state,
            "colour": state_colour(p.state),
            "rate": round(p.rate or 0, 1),
            "backlog": p.backlog,
            "url": p.get_absolute_url(),
            "remote": p.is_remote,
            "dblink": p.destination_dblink,
            "destination": p.destination,
        }
        for p in props
    ]
    graph = {
        "nodes": nodes,
        "edges": edges,
        "sites": [],
        "instances": [],
        "gateway_links": [],
        "cycles": [],
    }
    local = local_global_name()
    _add_sites(graph, local)
    _add_instances(graph, list(instance_list().order_by("inst_id")), local)
    _add_gateway(graph, links, foreign, jobs, held)
    _mark_cycles(graph)
    return graph


EDGE_PROPAGATION = "propagation"
EDGE_GATEWAY_JOB = "gateway_job"
NODE_FOREIGN = "FOREIGN"  # a node's kind: beside the queue kinds and REMOTE


def _instance_id(inst_id: int) -> str:
    return f"instance:{inst_id}"


def _add_instances(graph: dict[str, Any], instances: list[Any], local: str) -> None:
    """With more than one instance, a group per owner instance of the queues drawn, around
    them; inside this site's group when there are sites (remote queues stay in theirs). A queue
    whose table has no owner (no instance up) stays where it was."""
    if len(instances) < 2:
        return
    owned = {n["instance"] for n in graph["nodes"] if n.get("instance")}
    site = _site_id(local) if graph["sites"] else ""
    groups = []
    by_name = {}
    for inst in instances:
        if inst.name not in owned:
            continue
        group = {
            "id": _instance_id(inst.inst_id),
            "kind": "instance",
            "name": inst.name,
            "inst_id": inst.inst_id,
            "status": inst.status,
            "site": local if site else "",
        }
        if site:
            group["parent"] = site
        groups.append(group)
        by_name[inst.name] = group["id"]
    for n in graph["nodes"]:
        if n.get("instance") in by_name:
            n["parent"] = by_name[n["instance"]]
    graph["instances"] = groups


def _add_gateway(
    graph: dict[str, Any],
    links: list[Any],
    foreign: list[Any],
    jobs: list[Any],
    held: dict[int, int],
) -> None:
    """Gateway links as groups of their foreign queues (``NAME@LINK``), gateway jobs as edges:
    OUTBOUND from our queue to the foreign queue, INBOUND the other way; coloured by their
    status (grey when disabled), as propagations are by their state."""
    from django.urls import reverse

    from gateway.choices import BADGE, LINK_SYSTEMS, Direction
    from gateway.selectors import outbound_backlogs

    if not links:
        return
    graph["gateway_links"] = [
        {
            "id": f"link:{ln.pk}",
            "kind": "gateway_link",
            "name": ln.name,
            "link_type": ln.link_type,
            "system": LINK_SYSTEMS.get(ln.link_type, ln.link_type),
            "agent": ln.agent.name,
            "url": reverse("gateway:link", args=[ln.pk]),
        }
        for ln in links
    ]
    link_ids = {ln.pk for ln in links}
    for fq in foreign:
        if fq.link_id not in link_ids:  # past the limit: its group is not drawn
            continue
        graph["nodes"].append(
            {
                "id": f"fq{fq.pk}",
                "name": f"{fq.name}@{fq.link.name}",
                "depth": None,  # a foreign system's depth is not read
                "table": "",
                "kind": NODE_FOREIGN,
                "url": reverse("gateway:link", args=[fq.link_id]),
                "link": fq.link.name,
                "link_type": fq.link.link_type,
                "provider_queue": fq.provider_queue,
                "parent": f"link:{fq.link_id}",
            }
        )
    names = {n["id"]: n["name"] for n in graph["nodes"]}
    backlogs = outbound_backlogs(held) if jobs else {}
    for j in jobs:
        if j.direction == Direction.OUTBOUND:
            source, target = f"q{j.source_queue_id}", f"fq{j.destination_foreign_id}"
        else:
            source, target = f"fq{j.source_foreign_id}", f"q{j.destination_queue_id}"
        if source not in names or target not in names:  # past the limit
            continue
        graph["edges"].append(
            {
                "id": f"j{j.pk}",
                "kind": EDGE_GATEWAY_JOB,
                "name": j.name,
                "source": source,
                "target": target,
                "direction": j.direction,
                "state": j.status,
                "enabled": j.enabled,
                "colour": BADGE.get(j.status, "secondary") if j.enabled else "secondary",
                "rate": 0.0,
                "backlog": backlogs.get(j.pk, 0),
                "url": reverse("gateway:job", args=[j.pk]),
                "remote": False,
                "dblink": "",
                "destination": names[target],
                "link": j.link.name,
            }
        )


def topology_filter(graph: dict[str, Any], term: str) -> dict[str, Any]:
    """The part of ``graph`` around the queues whose name contains ``term`` (case-insensitive):
    those queues, every edge with either end among them (a propagation or a gateway job) and
    the queues at the edges' other ends; the groups that still hold a node. Sites stay (their
    reachability is news either way); cycles stay if one of their edges does."""
    term = term.strip().lower()
    if not term:
        return graph
    hits = {n["id"] for n in graph["nodes"] if term in n["name"].lower()}
    edges = [e for e in graph["edges"] if e["source"] in hits or e["target"] in hits]
    keep = hits | {e["source"] for e in edges} | {e["target"] for e in edges}
    nodes = [n for n in graph["nodes"] if n["id"] in keep]
    parents = {n.get("parent") for n in nodes}
    edge_ids = {e["id"] for e in edges}
    return {
        **graph,
        "nodes": nodes,
        "edges": edges,
        "instances": [g for g in graph["instances"] if g["id"] in parents],
        "gateway_links": [g for g in graph["gateway_links"] if g["id"] in parents],
        "cycles": [c for c in graph["cycles"] if edge_ids & set(c["edges"])],
    }


def _site_id(global_name: str) -> str:
    return f"site:{global_name}"


def _remote_node_id(global_name: str, queue: str) -> str:
    return f"site:{global_name}:{queue.upper()}"


def _read_sites(links: dict[str, Any], entries: dict[str, set[str]]) -> dict[str, Any]:
    """Each site's RemoteSite, or its RemoteError, read in parallel (one link per site), so
    one unreachable site costs the page one read timeout, not one per site."""
    from concurrent.futures import ThreadPoolExecutor

    from sites import remote, remote_topology

    def read(gn: str) -> Any:
        try:
            return remote_topology.read_site_topology(links[gn], queues=sorted(entries[gn]))
        except remote.RemoteError as exc:
            return exc
        except ValueError as exc:  # the password cannot be decrypted (the key changed)
            return remote.RemoteError(str(exc), field="password")

    wanted = [gn for gn in entries if gn in links]
    if not wanted:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(wanted))) as pool:
        return dict(zip(wanted, pool.map(read, wanted), strict=True))


def _add_sites(graph: dict[str, Any], local: str) -> None:
    """Sites as groups, ``QUEUE@LINK`` nodes, and the linked sites' own propagations from the
    queues this site's propagations reach (breadth first, across sites)."""
    from sites import remote
    from sites.models import DatabaseLink

    links_by_site: dict[str, list[Any]] = {}
    link_site: dict[str, str] = {}
    for link in DatabaseLink.objects.order_by("name"):
        links_by_site.setdefault(link.remote_global_name, []).append(link)
        link_site[link.name] = link.remote_global_name
    if not links_by_site:
        return
    nodes, edges = graph["nodes"], graph["edges"]
    local_ids = {n["name"].upper(): n["id"] for n in nodes}
    remote_nodes: dict[str, dict[str, Any]] = {}

    def node_for(gn: str, queue: str, via: str) -> str:
        if gn == local and queue.upper() in local_ids:  # a link back to this very site
            return local_ids[queue.upper()]
        nid = _remote_node_id(gn, queue)
        if nid not in remote_nodes:
            remote_nodes[nid] = {
                "id": nid,
                "name": f"{queue.upper()}@{via}",
                "queue": queue.upper(),
                "depth": None,
                "table": "",
                "kind": "REMOTE",
                "url": "",
                "site": gn,
                "parent": _site_id(gn),
            }
        return nid

    entries: dict[str, set[str]] = {}
    for e in edges:
        if e["remote"]:
            gn = link_site.get(e["dblink"], "")
            queue = e["destination"].partition("@")[0]
            e["target"] = node_for(gn, queue, e["dblink"])
            e["site"] = gn
            if gn != local:
                entries.setdefault(gn, set()).add(queue.upper())
    first_link = {gn: ls[0] for gn, ls in links_by_site.items()}
    read = _read_sites(first_link, entries)
    # Walk each read site's propagations from the queues reached there, across sites.
    todo = [(gn, q) for gn, qs in entries.items() for q in qs]
    seen = set(todo)
    while todo:
        gn, queue = todo.pop()
        site = read.get(gn)
        if site is None or isinstance(site, remote.RemoteError):
            continue
        via = first_link[gn].name
        for p in site.propagations:
            if p.source.upper() != queue:
                continue
            src = node_for(gn, p.source, via)
            if p.dblink:
                dest_site, dest_via = p.dblink_site, p.dblink
                if dest_site in first_link:  # this site knows it under its own link name
                    dest_via = first_link[dest_site].name
                target = node_for(dest_site, p.destination, dest_via)
            else:
                dest_site = gn
                target = node_for(gn, p.destination, via)
            edges.append(
                {
                    "id": f"site:{gn}:p:{p.name}",
                    "kind": EDGE_PROPAGATION,
                    "name": p.name,
                    "source": src,
                    "target": target,
                    "state": p.state,
                    "colour": state_colour(p.state),
                    "rate": 0.0,
                    "backlog": 0,
                    "url": "",
                    "remote": bool(p.dblink),
                    "dblink": p.dblink,
                    "destination": f"{p.destination}@{p.dblink}" if p.dblink else p.destination,
                    "site": gn,
                    "read_through": via,
                }
            )
            if dest_site != local and (dest_site, p.destination.upper()) not in seen:
                seen.add((dest_site, p.destination.upper()))
                todo.append((dest_site, p.destination.upper()))
                if dest_site not in read and dest_site in first_link:
                    read.update(_read_sites(first_link, {dest_site: {p.destination.upper()}}))
    for n in remote_nodes.values():
        site = read.get(n["site"])
        if site is not None and not isinstance(site, remote.RemoteError):
            n["depth"] = site.depth.get(n["queue"])
    sites = [{"id": _site_id(local), "kind": "site", "global_name": local, "local": True,
              "links": [], "reachable": True, "error": ""}]  # fmt: skip
    for gn in sorted(set(links_by_site) | {n["site"] for n in remote_nodes.values()}):
        if gn == local:
            sites[0]["links"] = [ln.name for ln in links_by_site.get(gn, [])]
            continue
        got = read.get(gn)
        sites.append(
            {
                "id": _site_id(gn),
                "kind": "site",
                "global_name": gn,
                "local": False,
                "links": [ln.name for ln in links_by_site.get(gn, [])],
                # None: not read (no propagation here reaches it, or no link here to it).
                "reachable": None if got is None else not isinstance(got, remote.RemoteError),
                "error": f"{got.field}: {got.message}"
                if isinstance(got, remote.RemoteError)
                else "",
            }
        )
    for n in nodes:
        n["site"] = local
        n["parent"] = _site_id(local)
    nodes.extend(remote_nodes.values())
    graph["sites"] = sites


def _mark_cycles(graph: dict[str, Any]) -> None:
    """Flag the edges on a directed cycle (Tarjan's strongly connected components): an edge
    whose ends are in one component of more than one queue is on a cycle (A → B → A)."""
    out: dict[str, list[str]] = {}
    for e in graph["edges"]:
        out.setdefault(e["source"], []).append(e["target"])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = [0, 0]

    def strongconnect(root: str) -> None:
        # Iterative, so a long chain of queues cannot exhaust Python's recursion limit.
        work = [(root, iter(out.get(root, [])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(out.get(w, []))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp[w] = counter[1]
                        if w == v:
                            break
                    counter[1] += 1

    for v in list(out):
        if v not in index:
            strongconnect(v)
    members: dict[int, list[str]] = {}
    for v, c in comp.items():
        members.setdefault(c, []).append(v)
    site_of = {n["id"]: n.get("site", "") for n in graph["nodes"]}
    cycles: dict[int, dict[str, Any]] = {}
    for e in graph["edges"]:
        c = comp.get(e["source"])
        on = (
            c is not None
            and c == comp.get(e["target"])
            and (len(members[c]) > 1 or e["source"] == e["target"])
        )
        e["cycle"] = on
        if on:
            cyc = cycles.setdefault(c, {"nodes": sorted(members[c]), "edges": [], "sites": []})
            cyc["edges"].append(e["id"])
    for cyc in cycles.values():
        cyc["sites"] = sorted({site_of.get(n, "") for n in cyc["nodes"]} - {""})
    graph["cycles"] = list(cycles.values())


# --- trace a message -----------------------------------------------------------------------------


def trace(*, queue: Queue, message: Any, max_hops: int = 16) -> dict[str, Any]:
    """Where ``message`` (a rules-engine message) would go from ``queue``, hop by hop through
    the propagations and their rule sets, and which rule decides each hop. A dry run: nothing is
    enqueued. A queue reached twice on one path is reported as a cycle and not followed again.

    A hop to ``QUEUE@LINK`` is decided here, then the trace goes on at the link's site: its
    propagations from that queue and their rule sets are read through the link and evaluated
    by this site's rules engine (the remote is the same codebase). A hop back to a site already
    on the path is a ``loop`` and stops there; a site that cannot be read is ``unreachable`` at
    that hop. Rule-based transformations are applied at this site only."""
    from queues import engine
    from queues.services import raw_connection
    from rules.lang.pipeline import apply, message_to_json
    from rules.lang.transform import TransformationError
    from rules.selectors import rule_set_spec, rule_set_transformations
    from sites.models import DatabaseLink
    from sites.selectors import local_global_name

    local = local_global_name()
    hops: list[dict[str, Any]] = []
    by_source: dict[int, list[Propagation]] = {}
    for p in propagation_list():
        by_source.setdefault(p.source_queue_id, []).append(p)
    links: dict[str, DatabaseLink] = {}  # global name → this site's first link to it
    link_site: dict[str, str] = {}
    for link in DatabaseLink.objects.order_by("name"):
        links.setdefault(link.remote_global_name, link)
        link_site[link.name] = link.remote_global_name
    sites = _TraceSites(links)

    def decide(hop: dict[str, Any], msg: Any, pos: Any, neg: Any, transforms: Any) -> Any:
        """The rule sets' decision recorded on the hop; the result, or None on an exception."""
        try:
            res = apply(msg, positive=pos, negative=neg, transformations_for=transforms)
        except TransformationError as exc:
            hop.update(decision="EXCEPTION", reason=str(exc), rule=None)
            return None
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
        return res

    def refused(hop: dict[str, Any], conn: Any, dest: int | str, msg: Any, res: Any) -> bool:
        """Whether the destination queue (here or at a site) would refuse the copy."""
        from jobs.runner import destination_copy

        try:
            info = engine.queue_info(conn, dest)
            engine.validate_message(
                info, destination_copy(_as_dequeued(msg), res.message_out, unchanged=False)
            )
        except engine.QueueNotFound as exc:
            hop.update(decision="EXCEPTION", reason=str(exc))
            return True
        except engine.InvalidMessage as exc:
            hop.update(decision="EXCEPTION", reason=f"{info.name} would refuse it: {exc}")
            return True
        return False

    def stops(hop: dict[str, Any], site: str, queue: str, path: _TracePath, depth: int) -> bool:
        """A queue already on the path (a cycle) or the depth limit ends this branch."""
        if (site, queue.upper()) in path.queues:
            hop["cycle"] = True
            return True
        if depth + 1 >= max_hops:
            hop["truncated"] = True
            return True
        return False

    def cross(hop: dict[str, Any], gn: str, queue: str, msg: Any, res: Any, path: Any) -> None:
        """Go on at site ``gn`` from its queue ``queue`` (the hop has been decided PERFORM)."""
        hop["site"] = gn
        if gn in path.sites:
            hop["loop"] = True
            return
        if gn not in links:
            hop["not_followed"] = f"This site has no database link to {gn}; not followed there."
            return
        conn = sites.connection(gn)
        if isinstance(conn, str):
            hop["unreachable"] = conn
            return
        try:
            if refused(hop, conn, queue, msg, res):
                return
            hop["subscribers"] = sites.subscribers(gn, queue)
        except psycopg.Error as exc:  # the site failed mid-read: unreachable from here on
            hop["unreachable"] = " ".join(str(exc).split())
            return
        if len(path.queues) >= max_hops:
            hop["truncated"] = True
            return
        walk_site(gn, queue.upper(), res.message_out, path.at(gn, queue), len(path.queues))

    def walk(q_id: int, msg: Any, path: _TracePath, depth: int) -> None:
        for p in by_source.get(q_id, []):
            hop: dict[str, Any] = {
                "depth": depth,
                "propagation": p.name,
                "propagation_id": p.pk,
                "source": p.source_queue.name,
                "destination": p.destination if p.is_remote else p.destination_queue.name,
                "destination_id": p.destination_queue_id,
                "state": p.state,
                "site": local,
            }
            hops.append(hop)
            pos, neg = p.positive_rule_set, p.negative_rule_set
            res = decide(
                hop,
                msg,
                rule_set_spec(pos) if pos is not None else None,
                rule_set_spec(neg) if neg is not None else None,
                rule_set_transformations(pos) if pos else {},
            )
            if res is None or not res.perform:
                continue
            if p.is_remote:
                gn = link_site.get(p.destination_dblink, "")
                hop["remote"] = True
                cross(hop, gn, p.destination_remote_queue, msg, res, path)
                continue
            if refused(hop, raw_connection(), p.destination_queue_id, msg, res):
                continue
            if stops(hop, local, p.destination_queue.name, path, depth):
                continue
            walk(
                p.destination_queue_id,
                res.message_out,
                path.at(local, p.destination_queue.name),
                depth + 1,
            )

    def walk_site(gn: str, queue: str, msg: Any, path: _TracePath, depth: int) -> None:
        via = links[gn].name
        for p in sites.propagations(gn):
            if p.source.upper() != queue:
                continue
            hop: dict[str, Any] = {
                "depth": depth,
                "propagation": p.name,
                "propagation_id": None,
                "source": f"{p.source}@{via}",
                "destination": f"{p.destination}@{p.dblink}"
                if p.dblink
                else f"{p.destination}@{via}",
                "destination_id": None,
                "state": p.state,
                "site": gn,
                "at_site": gn,
                "read_through": via,
            }
            hops.append(hop)
            try:
                pos = sites.rule_set(gn, p.positive_rule_set_id)
                neg = sites.rule_set(gn, p.negative_rule_set_id)
            except Exception as exc:  # a lost site, or a rule this engine cannot compile
                hop.update(decision="EXCEPTION", reason=" ".join(str(exc).split()), rule=None)
                continue
            res = decide(hop, msg, pos, neg, {})
            if res is None or not res.perform:
                continue
            if p.dblink:
                hop["remote"] = True
                if p.dblink_site in links:  # shown under this site's own name for it
                    hop["destination"] = f"{p.destination}@{links[p.dblink_site].name}"
                cross(hop, p.dblink_site, p.destination, msg, res, path)
                continue
            conn = sites.connection(gn)
            if isinstance(conn, str):
                hop["unreachable"] = conn
                continue
            if refused(hop, conn, p.destination, msg, res):
                continue
            if stops(hop, gn, p.destination, path, depth):
                continue
            walk_site(
                gn, p.destination.upper(), res.message_out, path.at(gn, p.destination), depth + 1
            )

    try:
        walk(queue.pk, message, _TracePath((local,), ((local, queue.name.upper()),)), 0)
    finally:
        sites.close()
    reached = sorted({h["destination"] for h in hops if h.get("decision") == "PERFORM"})
    return {"queue": queue.name, "site": local, "hops": hops, "reaches": reached}


@dataclass(frozen=True)
class _TracePath:
    """The sites and (site, queue) pairs on the path so far."""

    sites: tuple[str, ...]
    queues: tuple[tuple[str, str], ...]

    def at(self, site: str, queue: str) -> _TracePath:
        return _TracePath(
            self.sites if site in self.sites else (*self.sites, site),
            (*self.queues, (site, queue.upper())),
        )


class _TraceSites:
    """The linked sites one trace reads: one connection per site (short timeouts), their
    propagations and rule sets read once, all closed at the end."""

    def __init__(self, links: dict[str, Any]) -> None:
        self.links = links
        self._conns: dict[str, Any] = {}
        self._stack: dict[str, Any] = {}
        self._props: dict[str, list[Any]] = {}
        self._rule_sets: dict[tuple[str, int], Any] = {}

    def connection(self, gn: str) -> Any:
        """An open connection to the site, or the text saying why it cannot be read."""
        from contextlib import ExitStack

        from sites import remote, remote_topology

        if gn not in self._conns:
            stack = ExitStack()
            try:
                self._conns[gn] = stack.enter_context(remote_topology.site_reader(self.links[gn]))
                self._stack[gn] = stack
            except remote.RemoteError as exc:
                self._conns[gn] = f"Site {gn} is unreachable: {exc.field}: {exc.message}"
            except ValueError as exc:
                self._conns[gn] = f"Site {gn} is unreachable: password: {exc}"
        return self._conns[gn]

    def propagations(self, gn: str) -> list[Any]:
        from sites import remote_topology

        if gn not in self._props:
            conn = self.connection(gn)
            self._props[gn] = (
                [] if isinstance(conn, str) else remote_topology.read_propagations(conn)
            )
        return self._props[gn]

    def subscribers(self, gn: str, queue: str) -> list[str]:
        """The queue's subscribers at the site that are not propagations (its consumers)."""
        rows = self.connection(gn).execute(
            "SELECT s.name FROM queues_subscriber s JOIN queues_queue q ON q.id = s.queue_id "
            "WHERE upper(q.name) = upper(%s) AND NOT EXISTS "
            "(SELECT 1 FROM jobs_propagation p WHERE p.subscriber_id = s.id) ORDER BY s.name",
            (queue,),
        )
        return [r[0] for r in rows.fetchall()]

    def rule_set(self, gn: str, rule_set_id: int | None) -> Any:
        from sites import remote_topology

        if rule_set_id is None:
            return None
        key = (gn, rule_set_id)
        if key not in self._rule_sets:
            got = remote_topology.read_rule_set(self.connection(gn), rule_set_id)
            self._rule_sets[key] = remote_topology.rule_set_spec(got) if got else None
        return self._rule_sets[key]

    def close(self) -> None:
        for stack in self._stack.values():
            stack.close()


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
        payload_json="null",
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


def spark_job_parts_written(job_id: int, attempt: int) -> bool:
    """Whether the attempt has committed a part yet (its following task's sign of WRITING)."""
    from jobs.models import SparkJobPart

    return SparkJobPart.objects.filter(job_id=job_id, attempt=attempt).exists()


def spark_job_parts(job: Any) -> QuerySet[Any]:
    """The job's committed parts, in part order."""
    from jobs.models import SparkJobPart

    return SparkJobPart.objects.filter(job=job).order_by("part_no")


def propagation_warnings(propagation: Propagation) -> list[str]:
    """What is legal but likely not meant: an empty positive rule set discards every message,
    whatever the negative set says (spec rules §2.1 case 5, Table 5-1), so the propagation moves
    nothing until the set gets a rule. No set at all is different: every message goes."""
    rs = propagation.positive_rule_set
    if rs is None or rs.rules.exists():
        return []
    return [
        f"Positive rule set {rs.name} is empty: an empty positive rule set discards all messages "
        "(whatever the negative rule set says), so this propagation moves nothing until "
        f"{rs.name} has a rule. Leave the positive rule set empty to propagate every message."
    ]


def schedule_totals(
    schedule: PropagationSchedule | None, run: PropagationRun | None
) -> dict[str, Any] | None:
    """A schedule's totals as its page shows them: a run's counts fold into the schedule only
    when it ends (runner._FINISH_SQL), so the run holding the window now is counted in here, or
    the totals would stand still while messages move."""
    if schedule is None:
        return None
    live = run if run is not None and not run.folded else None
    return {
        "number": schedule.total_number + (live.propagated if live else 0),
        "bytes": schedule.total_bytes + (live.bytes if live else 0),
        "discarded": schedule.total_discarded + (live.discarded if live else 0),
        "exceptions": schedule.total_exceptions + (live.exceptions if live else 0),
        "runs": schedule.total_runs,
        "running": live is not None,
    }
