"""Reads of the gateway: querysets with their joins, ping, and the agent's diagnostics."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from gateway.choices import AGENT_LIVE_STATES, AgentPing, AgentStatus, Direction, JobStatus
from gateway.config import LOCK_NS, config
from gateway.drivers import driver_class
from gateway.drivers.base import AT_LEAST_ONCE
from gateway.models import Agent, AgentLogLine, ForeignQueue, Job, Link
from instances.selectors import INSTANCE_QUEUE_PREFIX
from jobs.models import Worker
from queues.selectors import subscriber_backlog_sql


def agent_list() -> QuerySet[Agent]:
    return (
        Agent.objects.annotate(
            link_count=Count("links", distinct=True),
            job_count=Count("links__jobs", distinct=True),
        )
        .prefetch_related("options")
        .order_by("name")  # the annotation drops the model's default ordering
    )


def _count_per_link(model: Any) -> Coalesce:
    """Rows of ``model`` on the outer link, as a correlated count."""
    rows = model.objects.filter(link=OuterRef("pk")).order_by().values("link")
    return Coalesce(Subquery(rows.annotate(n=Count("id")).values("n")[:1]), 0)


def link_list() -> QuerySet[Link]:
    # Two correlated counts, not Count(distinct) over both joins: those multiply a link's
    # foreign queues by its jobs (15,000 rows a link at 1,000 jobs on 8 links, 0.15 s a page).
    return (
        Link.objects.select_related("agent")
        .annotate(queue_count=_count_per_link(ForeignQueue), job_count=_count_per_link(Job))
        .order_by("name")
    )


def foreign_queue_list() -> QuerySet[ForeignQueue]:
    """Foreign queues with the jobs using each (source, destination or exception): three
    prefetches whatever the number of rows."""
    return ForeignQueue.objects.select_related("link", "link__agent").prefetch_related(
        Prefetch("jobs_in", queryset=Job.objects.only("id", "name", "source_foreign")),
        Prefetch("jobs_out", queryset=Job.objects.only("id", "name", "destination_foreign")),
        Prefetch("jobs_exc", queryset=Job.objects.only("id", "name", "exception_foreign")),
    )


def jobs_by_agent_and_status() -> dict[int, dict[str, int]]:
    """Job counts per agent and status, one query."""
    out: dict[int, dict[str, int]] = {}
    rows = Job.objects.values_list("link__agent_id", "status").annotate(n=Count("id"))
    for agent_id, status, n in rows:
        out.setdefault(agent_id, {})[status] = n
    return out


def link_guarantees(link: Link) -> dict[str, tuple[str, str]]:
    """The delivery guarantee of the link's jobs per direction, (guarantee, why). Outbound on
    AMQP and Redis is exactly-once only with an outbound log queue (the driver writes the job's
    record in the same foreign transaction as the batch)."""
    driver = driver_class(link.link_type)
    outbound = driver.outbound_guarantee
    if link.link_type in ("AMQP", "REDIS") and not link.outbound_log_queue:
        outbound = (
            AT_LEAST_ONCE,
            "No outbound log queue is set: a batch sent just before a crash may be sent again "
            "(each message keeps a stable id a consumer can de-duplicate on). Set one for "
            "exactly-once.",
        )
    return {"outbound": outbound, "inbound": driver.inbound_guarantee}


def job_list() -> QuerySet[Job]:
    return Job.objects.select_related(
        "link",
        "link__agent",
        "source_queue",
        "destination_queue",
        "exception_queue",
        "source_foreign__link",
        "destination_foreign__link",
        "exception_foreign__link",
        "subscriber",
    )


def topology_parts(*, limit: int, q: str = "") -> tuple[list[Link], list[ForeignQueue], list[Job]]:
    """The links, foreign queues and jobs the topology graph draws (jobs.selectors.topology):
    three queries whatever their number, each row with the relations the graph names. ``q``:
    only the jobs with an end (our queue or the foreign one) whose name contains it, and the
    foreign queues that match or that those jobs use."""
    links = list(Link.objects.select_related("agent").order_by("name")[:limit])
    job_qs = Job.objects.select_related("link", "source_foreign__link", "destination_foreign__link")
    foreign_qs = ForeignQueue.objects.select_related("link")
    if q:
        job_qs = job_qs.filter(
            Q(source_queue__name__icontains=q)
            | Q(destination_queue__name__icontains=q)
            | Q(source_foreign__name__icontains=q)
            | Q(destination_foreign__name__icontains=q)
        )
    jobs = list(job_qs.order_by("name")[:limit])
    if q:
        used = {j.source_foreign_id or j.destination_foreign_id for j in jobs}
        foreign_qs = foreign_qs.filter(Q(name__icontains=q) | Q(pk__in=used))
    foreign = list(foreign_qs.order_by("link__name", "name")[:limit])
    return links, foreign, jobs


def agent_log(agent: Agent, *, limit: int = 200, min_severity: str = "") -> QuerySet[AgentLogLine]:
    qs = AgentLogLine.objects.filter(agent=agent)
    if min_severity == "WARN":
        qs = qs.filter(severity__in=["WARN", "ERROR"])
    elif min_severity == "ERROR":
        qs = qs.filter(severity="ERROR")
    return qs.order_by("-id")[:limit]


def live_agent_ids() -> set[int]:
    """Agents whose process holds its session advisory lock right now (gateway/agent.py)."""
    with connection.cursor() as cur:
        cur.execute(
            # Advisory locks are server-wide: only this database's agents count.
            "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
            "AND objsubid = 2 AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [LOCK_NS],
        )
        return {int(r[0]) for r in cur.fetchall()}


def console_database_role() -> tuple[str, str]:
    """The PostgreSQL role the console itself logs in as and its password: an agent user for
    an agent that may do what the console does (the demo, the benchmark, the tests). When the
    server lets the console in without a password (trust or peer authentication) the password
    is a random one the server does not check, since DBMS_MGWADM wants one with a username."""
    connection.ensure_connection()
    info = connection.connection.info
    return info.user, info.password or secrets.token_urlsafe(16)


def agent_ping(agent: Agent, *, live: set[int] | None = None) -> str | None:
    """MGW_GATEWAY.AGENT_PING: None when no process should exist (NOT_STARTED, START_SCHEDULED,
    BROKEN); REACHABLE when the process holds its lock and beat recently; else UNREACHABLE."""
    if agent.status not in AGENT_LIVE_STATES:
        return None
    live = live_agent_ids() if live is None else live
    fresh = agent.heartbeat_at is not None and agent.heartbeat_at > timezone.now() - timedelta(
        seconds=config()["STALE_S"]
    )
    return AgentPing.REACHABLE if agent.pk in live and fresh else AgentPing.UNREACHABLE


def agent_diagnostics(agent: Agent) -> list[str]:
    """Why an agent is stuck (spec §4.3): a START_SCHEDULED agent needs a worker on its queue."""
    notes: list[str] = []
    if agent.status == AgentStatus.START_SCHEDULED:
        cutoff = timezone.now() - timedelta(seconds=60)
        serving = Worker.objects.filter(
            stopped_at__isnull=True, last_seen__gte=cutoff, queues__contains=[agent.celery_queue]
        )
        if agent.restart_at:
            # After a failure, or a start already sent: the start task goes (again) then.
            notes.append(
                f"The start task is sent at {agent.restart_at:%H:%M:%S} unless a worker has "
                "taken the start by then."
            )
        if not serving.exists():
            notes.append(
                f"No live Celery worker consumes {agent.celery_queue}: start one with "
                f"`celery -A console worker -Q {agent.celery_queue} -c {agent.max_threads + 1}`."
            )
    if agent.status == AgentStatus.BROKEN:
        notes.append(
            "Make sure no agent process is left, then run CLEANUP_GATEWAY with CLEAN_STARTUP_STATE."
        )
    return notes


def jobs_by_status(agent: Agent | None = None) -> dict[str, int]:
    qs = Job.objects.all()
    if agent is not None:
        qs = qs.filter(link__agent=agent)
    return dict(qs.values_list("status").annotate(n=Count("id")).values_list("status", "n"))


def agent_summary() -> dict[str, Any]:
    return {
        "agents": Agent.objects.count(),
        "running": Agent.objects.filter(status=AgentStatus.RUNNING).count(),
        "failing_jobs": Job.objects.filter(Q(status="FAILED") | Q(status="RETRY")).count(),
    }


# What an outbound job's multi-consumer source still keeps for it, as for a propagation.
_SUBSCRIBER_BACKLOG_SQL = subscriber_backlog_sql("gateway_job")


def outbound_backlogs(queue_depths: dict[int, int]) -> dict[int, int]:
    """Per OUTBOUND job id: the messages waiting at its source for it. A multi-consumer source
    keeps its subscriber's copies (counted here, one query for every job); a single-consumer
    source's whole depth is the job's (the job is its only reader), taken from ``queue_depths``
    (queue id → READY + WAITING, which the caller has already read). INBOUND jobs are left out:
    a foreign source's depth is not read."""
    from django.db.models.expressions import RawSQL

    rows = (
        Job.objects.filter(direction=Direction.OUTBOUND)
        .order_by()
        .annotate(
            sub_backlog=RawSQL(
                f"CASE WHEN gateway_job.subscriber_id IS NULL THEN NULL "
                f"ELSE {_SUBSCRIBER_BACKLOG_SQL} END",
                (),
            )
        )
        .values_list("pk", "source_queue_id", "sub_backlog")
    )
    return {pk: sub if sub is not None else queue_depths.get(source, 0) for pk, source, sub in rows}


# --- where an agent runs (its instance affinity, docs/INSTANCES.md) ------------------------------
#
# SQL over the agent row aliased ``ag``, shared by the claim and the heartbeat of the agent
# process (gateway/lifecycle.py), the start's routing (gateway/services.py) and the pages/API.

# The queue table the agent follows: its service's (DBA_SERVICES.NAME; NULL when it names no
# queue any more), else one of the queue tables of its outbound jobs whose owner has the most of
# them (ties: the lowest queue table id). NULL: no affinity.
AFFINITY_SQL = f"""(CASE WHEN ag.service <> '' THEN
    (SELECT q.queue_table_id FROM dba_services s JOIN queues_queue q ON q.id = s.service_id
     WHERE upper(s.name) = upper(ag.service) LIMIT 1)
ELSE
    (SELECT min(q.queue_table_id) FROM gateway_job j
     JOIN gateway_link l ON l.id = j.link_id
     JOIN queues_queue q ON q.id = j.source_queue_id
     JOIN queues_queuetable t ON t.id = q.queue_table_id
     WHERE l.agent_id = ag.id AND j.direction = '{Direction.OUTBOUND}'
       AND j.status <> '{JobStatus.DELETE_PENDING}'
     GROUP BY t.owner_instance_id ORDER BY count(*) DESC, min(q.queue_table_id) LIMIT 1)
END)"""

# Where the agent must run (lower-case instance name): the owner of its affinity queue table,
# while that instance is up and one of its workers consumes its copy of the agent's queue
# (aq.inst.<owner>.mgw.<AGENT>). NULL: anywhere (no affinity, no live owner, or an owner nobody
# would run it on), i.e. on the shared queue mgw.<AGENT>, as the queue monitor falls back.
# Parameters: %(place_prefix)s (INSTANCE_QUEUE_PREFIX), %(place_stale)s (seconds).
PLACE_SQL = f"""(SELECT lower(i.name) FROM queues_queuetable t
    JOIN aq_instance i ON i.inst_id = t.owner_instance_id
    WHERE t.id = {AFFINITY_SQL} AND i.alive_until > now()
      AND EXISTS (SELECT 1 FROM jobs_worker w
                  WHERE w.stopped_at IS NULL
                    AND w.last_seen > now() - make_interval(secs => %(place_stale)s)
                    AND w.queues ? (%(place_prefix)s || lower(i.name) || '.mgw.' || ag.name)))"""


def place_params() -> dict[str, Any]:
    """PLACE_SQL's parameters: a worker is live within three of its heartbeats (as the queue
    monitor's placement counts it)."""
    return {
        "place_prefix": INSTANCE_QUEUE_PREFIX,
        "place_stale": 3 * settings.AQ_WORKER_HEARTBEAT_S,
    }


def agent_place(agent_id: int) -> str | None:
    """The instance the agent must run on now, None when any instance may run it."""
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT {PLACE_SQL} FROM gateway_agent ag WHERE ag.id = %(agent)s",
            {**place_params(), "agent": agent_id},
        )
        row = cur.fetchone()
    return row[0] if row else None


def agent_place_missed_beats(agent_id: int) -> bool:
    """Whether the instance the agent must run on has stopped beating: its workers that serve
    the agent's instance queue all missed two heartbeats, yet still count as live (PLACE_SQL
    allows three) and the instance is not DOWN yet. A worker killed with its host, or its
    instance's only worker killed, looks like this for up to AQ_INSTANCE_HEARTBEAT_LIMIT_S; a
    start sent there would wait in a queue nobody reads until START_RESEND_S."""
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT p.place IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM jobs_worker w
                    WHERE w.stopped_at IS NULL
                      AND w.last_seen > now() - make_interval(secs => %(fresh)s)
                      AND w.queues ? (%(place_prefix)s || p.place || '.mgw.' || p.agent))
                FROM (SELECT {PLACE_SQL} AS place, ag.name AS agent
                      FROM gateway_agent ag WHERE ag.id = %(agent)s) p""",
            {**place_params(), "agent": agent_id, "fresh": 2 * settings.AQ_WORKER_HEARTBEAT_S},
        )
        row = cur.fetchone()
    return bool(row and row[0])


@dataclass
class Placement:
    """Where an agent runs and why, for its page and the API."""

    affinity: str  # "SERVICE", "OUTBOUND_JOBS" or "" (none: it runs wherever it is taken)
    owner_instance: str | None  # the owner of the queue table it follows (None: no owner)
    owner_up: bool
    run_instance: str | None  # where it must run now; None: any instance
    instance: str | None  # where its live process runs (its worker's AQ_INSTANCE_NAME)
    off_owner_jobs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def agent_placements(agent_ids: list[int] | None = None) -> dict[int, tuple[Any, ...]]:
    """The affinity facts of ``agent_ids`` (None: every agent) in two queries, whatever the
    number of agents (the API's lists; pass the result to ``agent_placement``): {agent id:
    (queue table it follows, that table's owner, owner up, place, [(outbound job, its queue
    table's owner)])}."""
    out: dict[int, tuple[Any, ...]] = {}
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT ag.id, t.id, i.name, coalesce(i.alive_until > now(), false), {PLACE_SQL}
                FROM gateway_agent ag
                LEFT JOIN queues_queuetable t ON t.id = {AFFINITY_SQL}
                LEFT JOIN aq_instance i ON i.inst_id = t.owner_instance_id
                WHERE %(ids)s::bigint[] IS NULL OR ag.id = ANY(%(ids)s::bigint[])""",
            {**place_params(), "ids": agent_ids},
        )
        for agent_id, *facts in cur.fetchall():
            out[agent_id] = (*facts, [])
    jobs = (
        Job.objects.filter(direction=Direction.OUTBOUND, link__agent_id__in=list(out))
        .exclude(status=JobStatus.DELETE_PENDING)
        .order_by("name")
        .values_list("link__agent_id", "name", "source_queue__queue_table__owner_instance__name")
    )
    for agent_id, name, owner in jobs:
        if agent_id in out:
            out[agent_id][4].append((name, owner))
    return out


def agent_placement(agent: Agent, facts: dict[int, tuple[Any, ...]] | None = None) -> Placement:
    """The agent's instance affinity (docs/INSTANCES.md "gateway agents"): what it follows, the
    instance that must run it, and the outbound jobs whose queue table another instance owns
    ("runs off its owner"). ``facts``: ``agent_placements()``, read once for a list."""
    # One agent's page (polled every few seconds) reads that agent's facts only.
    facts = agent_placements([agent.pk]) if facts is None else facts
    table_id, owner, owner_up, place, jobs = facts.get(agent.pk, (None, None, False, None, []))
    live = agent.status in AGENT_LIVE_STATES
    p = Placement(
        affinity=(
            "SERVICE" if agent.service else ("OUTBOUND_JOBS" if table_id is not None else "")
        ),
        owner_instance=owner,
        owner_up=bool(owner_up),
        run_instance=place,
        instance=(agent.instance_name or None) if live else None,
    )
    if agent.service and table_id is None:
        p.warnings.append(
            f"Service {agent.service} names no queue any more: the agent runs on any instance."
        )
    if table_id is not None:
        p.off_owner_jobs = [name for name, job_owner in jobs if job_owner != owner]
        if p.off_owner_jobs:
            p.warnings.append(
                f"Runs off its owner: outbound job(s) {', '.join(p.off_owner_jobs)} read a queue "
                f"table owned by another instance than {owner or 'none'}."
            )
        if place is None:
            p.warnings.append(
                f"The owner instance {owner or '(none)'} is "
                + (
                    "up but no live worker consumes its copy of the agent's queue"
                    if owner_up
                    else "down"
                )
                + ": the agent runs on any instance serving "
                f"{agent.celery_queue}."
            )
    if live and place and p.instance and p.instance.lower() != place:
        p.warnings.append(
            f"Runs on {p.instance}, not on its owner {place}: it moves at its next heartbeat."
        )
    return p
