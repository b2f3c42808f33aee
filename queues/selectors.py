"""Reads of the queues app: one queryset per list, shared by the pages and the API."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import (
    Count,
    IntegerField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce

from core.lookups import name_or_id_q
from instances.choices import InstanceStatus
from instances.selectors import INSTANCE_QUEUE_PREFIX, up_expression
from queues.choices import MessageState
from queues.models import (
    Agent,
    AgentUser,
    DbaService,
    Message,
    Queue,
    QueuePrivilege,
    QueueStat,
    QueueTable,
    QueueTableOwnerMove,
    Subscriber,
)


def _per_queue(qs: QuerySet, expr) -> Subquery:  # type: ignore[no-untyped-def]
    return Subquery(qs.order_by().values("queue").annotate(v=expr).values("v")[:1])


DEPTH_COUNTERS = {f"depth_{state.lower()}": state for state in MessageState.values}
# What queue_list gives each queue beside its columns: depth per state, oldest READY message,
# engine counters.
QUEUE_COUNTERS = (*DEPTH_COUNTERS, "oldest_ready", "enqueued", "dequeued")


def _counter_expression(name: str):  # type: ignore[no-untyped-def]
    """One counter of one queue as a correlated subquery: only for ordering by it (the rows
    shown get theirs from :func:`queue_counters_fill`)."""
    # Naming the queue table lets PostgreSQL prune the partitioned message table to that queue
    # table's storage at run time, instead of probing every queue table's index per queue.
    msgs = Message.objects.filter(queue=OuterRef("pk"), queue_table=OuterRef("queue_table"))
    stats = QueueStat.objects.filter(queue=OuterRef("pk"))
    if name in DEPTH_COUNTERS:
        return Coalesce(
            _per_queue(msgs.filter(state=DEPTH_COUNTERS[name]), Count("id")),
            Value(0),
            output_field=IntegerField(),
        )
    if name == "oldest_ready":
        return _per_queue(msgs.filter(state=MessageState.READY), Min("enq_time"))
    return Coalesce(_per_queue(stats, Sum(name)), Value(0))


def queue_counters_fill(queues: list[Queue]) -> None:
    """Set the counters of QUEUE_COUNTERS on ``queues`` (fetched rows) in two grouped queries
    over those queues alone. Correlated subqueries in the list's SELECT cost a plan over every
    queue table's message partitions (110 ms at 100 queue tables, whatever the page size); this
    names the queue tables as constants, so the plan is pruned to the rows' own partitions."""
    if not queues:
        return
    ids = [q.pk for q in queues]
    depths = {
        row.pop("queue_id"): row
        for row in Message.objects.filter(
            queue_id__in=ids, queue_table_id__in={q.queue_table_id for q in queues}
        )
        .order_by()
        .values("queue_id")
        .annotate(
            **{key: Count("id", filter=Q(state=state)) for key, state in DEPTH_COUNTERS.items()},
            oldest_ready=Min("enq_time", filter=Q(state=MessageState.READY)),
        )
    }
    stats = {
        row.pop("queue"): row
        for row in QueueStat.objects.filter(queue_id__in=ids)
        .order_by()
        .values("queue")
        .annotate(enqueued=Sum("enqueued"), dequeued=Sum("dequeued"))
    }
    none = {**dict.fromkeys(DEPTH_COUNTERS, 0), "oldest_ready": None}
    for q in queues:
        for key, value in depths.get(q.pk, none).items():
            setattr(q, key, value)
        stat = stats.get(q.pk, {})
        q.enqueued = stat.get("enqueued") or 0
        q.dequeued = stat.get("dequeued") or 0


class QueueListQuerySet(QuerySet):
    """Queues that carry their counters (QUEUE_COUNTERS) once fetched, the way prefetch_related
    carries relations: two more queries for the rows fetched, however many queues there are.
    Ordering, filtering or ``values()`` by a counter (a list sorted by depth) annotates that
    counter as a subquery for the query that needs it."""

    def _with_counters(self, names: Any) -> QueueListQuerySet:
        wanted = {n.lstrip("-").split("__")[0] for n in names if isinstance(n, str)}
        missing = {
            n: _counter_expression(n)
            for n in sorted(wanted & set(QUEUE_COUNTERS))
            if n not in self.query.annotations
        }
        return self.annotate(**missing) if missing else self  # type: ignore[return-value]

    def order_by(self, *field_names: Any) -> QuerySet:
        return super(QueueListQuerySet, self._with_counters(field_names)).order_by(*field_names)

    def values(self, *fields: Any, **expressions: Any) -> QuerySet:
        return super(QueueListQuerySet, self._with_counters(fields)).values(*fields, **expressions)

    def values_list(self, *fields: Any, **kwargs: Any) -> QuerySet:
        return super(QueueListQuerySet, self._with_counters(fields)).values_list(*fields, **kwargs)

    def filter(self, *args: Any, **kwargs: Any) -> QuerySet:
        return super(QueueListQuerySet, self._with_counters(kwargs)).filter(*args, **kwargs)

    def exclude(self, *args: Any, **kwargs: Any) -> QuerySet:
        return super(QueueListQuerySet, self._with_counters(kwargs)).exclude(*args, **kwargs)

    def _fetch_all(self) -> None:
        fresh = self._result_cache is None
        super()._fetch_all()
        rows = self._result_cache or []
        if fresh and rows and isinstance(rows[0], Queue):
            queue_counters_fill(rows)  # type: ignore[arg-type]


def queue_list() -> QuerySet[Queue]:
    """Queues with their queue table, service and owner status in one query, and their depth
    per state, oldest ready message and counters (QueueListQuerySet) in two more for the rows
    fetched, so a list page costs the same whatever the number of queues."""
    return (
        QueueListQuerySet(model=Queue)
        .select_related("queue_table", "exception_queue", "queue_table__owner_instance")
        .annotate(
            # The queue's service (DBA_SERVICES; the view owns the name's spelling) and where
            # it resolves: the queue table's owner instance.
            service_name=Subquery(
                DbaService.objects.filter(service_id=OuterRef("pk")).values("name")[:1]
            ),
            owner_status=up_expression("queue_table__owner_instance__"),
        )
    )


def queue_counters_all() -> list[dict[str, Any]]:
    """Every queue's depth per state and counters (``queue_list``'s names and values, as dicts)
    for readers of all queues at once (/metrics, the rate sampler): three grouped scans, whose
    cost follows the number of messages, instead of ``queue_list``'s probes per queue, whose cost
    follows the number of queues (at 1,000 queues, 400 ms against a few)."""
    depth_keys = {state: f"depth_{state.lower()}" for state in MessageState.values}
    depths = {
        row.pop("queue_id"): row
        for row in Message.objects.order_by()
        .values("queue_id")
        .annotate(**{key: Count("id", filter=Q(state=state)) for state, key in depth_keys.items()})
    }
    stats = {
        row["queue"]: row
        for row in QueueStat.objects.order_by()
        .values("queue")
        .annotate(enqueued=Sum("enqueued"), dequeued=Sum("dequeued"))
    }
    none = dict.fromkeys(depth_keys.values(), 0)
    out = []
    for row in Queue.objects.order_by("pk").values("pk", "name", "queue_table__name"):
        stat = stats.get(row["pk"], {})
        out.append(
            {
                **row,
                **depths.get(row["pk"], none),
                "enqueued": stat.get("enqueued") or 0,
                "dequeued": stat.get("dequeued") or 0,
            }
        )
    return out


def queue_get(pk_or_name: int | str) -> Queue:
    """One queue by id or name (case-insensitive), with the list's annotations."""
    qs = queue_list()
    if (where := name_or_id_q(pk_or_name)) is None:
        raise qs.model.DoesNotExist(f"No such queue: {pk_or_name!r}.")
    return qs.get(where)


def queue_table_list() -> QuerySet[QueueTable]:
    # GROUP BY queries drop Meta.ordering, so order explicitly for stable paging.
    return (
        QueueTable.objects.select_related(*INSTANCE_ROLES, "owner")
        .annotate(
            queue_count=Count("queues", distinct=True),
            **{f"{role}_status": up_expression(f"{role}__") for role in INSTANCE_ROLES},
        )
        .order_by("name")
    )


INSTANCE_ROLES = ("primary_instance", "secondary_instance", "owner_instance")


def queue_table_instance_warnings(qt: QueueTable) -> list[str]:
    """What the user should know about the instances a queue table (from queue_table_list)
    names: one that no worker ever reported, or one that is down now."""
    out = []
    for role in ("primary_instance", "secondary_instance"):
        inst = getattr(qt, role)
        if inst is None or getattr(qt, f"{role}_status") == InstanceStatus.UP:
            continue
        label = role.replace("_", " ")
        if inst.last_heartbeat is None:
            out.append(
                f"The {label} {inst.name} has never reported: it stays DOWN until a Celery "
                f"worker runs with AQ_INSTANCE_NAME={inst.name}."
            )
        else:
            out.append(
                f"The {label} {inst.name} is DOWN: no worker of it has beaten since "
                f"{inst.last_heartbeat:%Y-%m-%d %H:%M:%S %Z}."
            )
    return out


def owner_move_list() -> QuerySet[QueueTableOwnerMove]:
    return QueueTableOwnerMove.objects.select_related(
        "queue_table", "from_instance", "to_instance"
    ).order_by("-at", "-id")


def message_list(*, queue: Queue | None = None) -> QuerySet[Message]:
    qs = Message.objects.select_related("original_queue")
    if queue is None:
        return qs
    # The queue table prunes the partitioned message table to that queue table's storage.
    return qs.filter(queue=queue, queue_table_id=queue.queue_table_id)


def subscriber_list() -> QuerySet[Subscriber]:
    return Subscriber.objects.select_related("queue")


def agent_list() -> QuerySet[Agent]:
    return Agent.objects.prefetch_related("users")


def agent_user_list() -> QuerySet[AgentUser]:
    return AgentUser.objects.select_related("agent", "user")


def queue_privilege_list() -> QuerySet[QueuePrivilege]:
    return QueuePrivilege.objects.select_related("queue", "user")


def overview() -> dict[str, int]:
    """Counts for the dashboard."""
    by_state = dict(
        Message.objects.order_by()
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    return {
        "queue_tables": QueueTable.objects.count(),
        "queues": Queue.objects.count(),
        "ready": by_state.get(MessageState.READY, 0),
        "expired": by_state.get(MessageState.EXPIRED, 0),
    }


def message_rule_test(message: Message, *, positive: Any, negative: Any) -> dict[str, Any]:
    """Table 5-1 for a queued message against a client's rule sets ("test a message" with a
    message picked from a queue): the rules app's decision over the engine's row."""
    from rules.lang import message_from_queue
    from rules.selectors import rule_set_decide

    return rule_set_decide(
        message_from_queue(
            message.kind,
            message.type_name,
            message.payload,
            origin=message.origin_site,
            tag=message.tag,
        ),
        positive=positive,
        negative=negative,
    )


# --- origin, route and tag (docs/SITES.md, "Origin, route and tag") ------------------------------


def message_origin(stored: str | None) -> str:
    """A message's origin site as shown: the stored one (it came from another site), or this
    site's GLOBAL_NAME for a message enqueued here (stored NULL)."""
    return stored or str(settings.AQ_GLOBAL_NAME)


def tag_hex(tag: bytes | memoryview | str | None) -> str | None:
    """A Streams tag as upper-case hex text (the engine reads it so already; the ORM gives
    bytes), or None."""
    if tag is None:
        return None
    if isinstance(tag, str):
        return tag.upper()
    return bytes(tag).hex().upper() or None


# --- where the queue monitor's timers run (queues.tasks) -----------------------------------------

_MONITOR_PLACES_SQL = """
SELECT t.id, lower(i.name),
       EXISTS (SELECT 1 FROM jobs_worker w
               WHERE w.stopped_at IS NULL AND w.last_seen > now() - make_interval(secs => %s)
               AND w.queues ? (%s || lower(i.name) || '.' || %s))
FROM queues_queuetable t
LEFT JOIN aq_instance i ON i.inst_id = t.owner_instance_id AND i.alive_until > now()
ORDER BY t.id
"""


def monitor_places(here: str, queue: str) -> tuple[list[int], dict[str, list[int]]]:
    """Where each queue table's timers run: ``(here_ids, {instance: ids})``. A queue table's
    timers run on its owner instance, through the owner's copy of the monitor's Celery
    ``queue``; those of tables owned by ``here``, with no live owner, or whose owner has no
    live worker on that queue (nobody else would run them) run ``here``."""
    from django.db import connection

    here = here.lower()
    local: list[int] = []
    remote: dict[str, list[int]] = {}
    stale_s = 3 * settings.AQ_WORKER_HEARTBEAT_S
    with connection.cursor() as cur:
        # instances.selectors.instance_queue's name, built in SQL per owner.
        cur.execute(_MONITOR_PLACES_SQL, [stale_s, INSTANCE_QUEUE_PREFIX, queue.lower()])
        for table_id, owner, served in cur.fetchall():
            if owner is None or owner == here or not served:
                local.append(table_id)
            else:
                remote.setdefault(owner, []).append(table_id)
    return local, remote


def owned_queue_table_ids(instance: str) -> list[int]:
    """The queue tables whose owner is ``instance`` (up or not: the caller runs on it)."""
    return list(
        QueueTable.objects.filter(owner_instance__name__iexact=instance)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def subscriber_backlog_sql(table: str) -> str:
    """SQL for what a multi-consumer source still keeps for the subscriber of a row of ``table``
    (a propagation's or an outbound gateway job's: columns ``subscriber_id`` and
    ``source_queue_id``): its consumer rows less its copies parked in the exception queue. A
    PL/pgSQL function (jobs migration 0011), so the plan covers the source's queue table's
    storage alone: as a subquery it was planned over every queue table's partitions (0.4 s per
    read at 100 queue tables)."""
    return f"aq_propagation_backlog({table}.subscriber_id, {table}.source_queue_id)"
