"""Writes of the jobs app: propagations (DBMS_PROPAGATION_ADM), their schedules (DBMS_AQADM's
SCHEDULE/ALTER/ENABLE/DISABLE/UNSCHEDULE_PROPAGATION), maintenance mode, and the background
verbs the Celery beat runs (dispatch, reap, worker heartbeats).

Each verb is one transaction and one change-log entry; pages, API and tasks all call these.
Runs are created here before their task is sent, and the task is sent only after commit.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import Case, CharField, F, Func, Q, Value, When
from django.db.models.functions import Concat, JSONObject, Now
from django.utils import timezone

from core.choices import Capability, ChangeAction
from core.exceptions import Conflict, DomainError, ErrorCollector, Forbidden
from core.roles import user_can
from core.services import change_log_deletion, change_log_record, object_snapshot
from core.validators import MAX_SECONDS, PG_INT_MAX
from instances.selectors import instance_queue
from jobs import runner
from jobs.choices import RunState
from jobs.models import Maintenance, Propagation, PropagationRun, PropagationSchedule, Worker
from jobs.schedule import validate_schedule, window_at
from queues import engine
from queues import services as queue_services
from queues.choices import QueueKind
from queues.models import Queue, Subscriber
from rules import services as rule_services
from rules.lang.clients import PROPAGATION
from rules.models import RuleSet
from sites.models import DatabaseLink

User = AbstractBaseUser | AnonymousUser | None
log = logging.getLogger(__name__)

PROPAGATION_EDITABLE = ("positive_rule_set", "negative_rule_set", "comment")
SCHEDULE_EDITABLE = ("start_time", "duration", "next_time", "latency", "max_failures")


def _require(user: User, capability: str) -> None:
    if user is not None and not user_can(user, capability):
        raise Forbidden("Your role does not allow this.")


def _log(
    user: User, action: str, verb: str, obj: Any, before: Any = None, after: Any = None
) -> None:
    change_log_record(user=user, action=action, verb=verb, obj=obj, before=before, after=after)


def _cfg() -> dict[str, Any]:
    return runner.config()


# --- propagations --------------------------------------------------------------------------------


def payload_compatible(source: Queue, destination: Queue) -> str | None:
    """Why ``destination`` cannot take ``source``'s messages, or None when it can. An ANY queue
    takes everything; a typed queue takes only its own type with the same schema."""
    dst, src = destination.queue_table, source.queue_table
    return runner.payload_why(
        source.name, src.payload_type, src.payload_schema,
        destination.name, dst.payload_type, dst.payload_schema,
    )  # fmt: skip


def remote_queue_check(source: Queue, queue: str, link: DatabaseLink, *, field: str) -> None:
    """Ask the link's site whether ``queue`` exists there as a normal queue that takes the
    source's payloads; a DomainError naming ``field`` (and the link) otherwise."""
    from sites import remote

    where = f"{queue}@{link.name}"
    try:
        with remote.connect(remote.link_endpoint(link)) as conn:
            remote.read_site(conn, remote.link_endpoint(link))
            info = engine.queue_info(conn, queue)
    except remote.RemoteError as exc:
        raise DomainError(
            f"Database link {link.name} could not reach its site to check {where}: "
            f"{exc.message} (link field {exc.field})",
            field=field,
        ) from exc
    except engine.QueueNotFound as exc:
        raise DomainError(
            f"Queue {queue} does not exist at the site of database link {link.name} "
            f"({link.remote_global_name}).",
            field=field,
        ) from exc
    except psycopg.Error as exc:
        raise DomainError(
            f"The site of database link {link.name} refused to describe {where}: "
            f"{' '.join(str(exc).split())}",
            field=field,
        ) from exc
    if info.is_exception:
        raise DomainError(
            f"{where} is an exception queue; messages arrive there only from the engine.",
            field=field,
        )
    why = runner.payload_why(
        source.name, source.queue_table.payload_type, source.queue_table.payload_schema,
        where, info.payload_type, info.payload_schema,
    )  # fmt: skip
    if why:
        raise DomainError(why, field=field)


def _check_queues(source: Queue | None, destination: Queue | None) -> None:
    if source is None:
        raise DomainError("Choose a source queue.", field="source_queue")
    if destination is None:
        raise DomainError("Choose a destination queue.", field="destination_queue")
    if source.pk == destination.pk:
        raise DomainError("A queue cannot propagate to itself.", field="destination_queue")
    _check_source(source)
    if destination.kind == QueueKind.EXCEPTION:
        raise DomainError(
            f"{destination.name} is an exception queue; messages arrive there only from the "
            "engine.",
            field="destination_queue",
        )
    why = payload_compatible(source, destination)
    if why:
        raise DomainError(why, field="destination_queue")
    existing = (
        Propagation.objects.filter(source_queue=source, destination_queue=destination)
        .only("name")
        .first()
    )
    if existing is not None:
        raise Conflict(
            f"Propagation {existing.name} already goes from {source.name} to {destination.name}; "
            "only one propagation is allowed per pair.",
            field="destination_queue",
        )


def _check_source(source: Queue) -> None:
    if source.kind == QueueKind.EXCEPTION:
        raise DomainError(
            f"{source.name} is an exception queue; propagate from a normal queue.",
            field="source_queue",
        )
    if not source.queue_table.multiple_consumers:
        raise DomainError(
            f"{source.name} is a single-consumer queue; a propagation is a subscriber of its "
            "source, so the source must be in a multi-consumer queue table.",
            field="source_queue",
        )


def _check_remote(source: Queue | None, destination: str) -> tuple[str, DatabaseLink]:
    """A QUEUE@LINK destination: its link exists, its site has the queue, it takes the source's
    payloads, and no other propagation goes from the source to it."""
    from sites.selectors import database_link_names_to_site, remote_destination

    field = "destination_queue"
    if source is None:
        raise DomainError("Choose a source queue.", field="source_queue")
    queue, link = remote_destination(destination, field=field)
    _check_source(source)
    # One propagation per (source, destination queue), the destination known by its site's
    # global name: through another link to the same site it is the same queue, and a second
    # propagation would deliver every message twice.
    existing = Propagation.objects.filter(
        source_queue=source,
        destination_dblink__in=database_link_names_to_site(link.remote_global_name),
        destination_remote_queue=queue,
    ).first()
    if existing is not None:
        same = existing.destination_dblink == link.name
        raise Conflict(
            f"Propagation {existing.name} already goes from {source.name} to "
            f"{queue}@{existing.destination_dblink}"
            + ("" if same else f", the same queue at site {link.remote_global_name}")
            + "; only one propagation is allowed per pair.",
            field=field,
        )
    remote_queue_check(source, queue, link, field=field)
    return queue, link


def _check_rule_sets(positive: RuleSet | None, negative: RuleSet | None) -> None:
    if positive is not None and negative is not None and positive.pk == negative.pk:
        raise DomainError(
            "The same rule set cannot be both positive and negative.", field="negative_rule_set"
        )
    rule_services.client_rule_sets_check(PROPAGATION, positive=positive, negative=negative)


@transaction.atomic
def propagation_create(
    *,
    user: User,
    name: str,
    source_queue: Queue | None,
    destination_queue: Queue | str | None,
    positive_rule_set: RuleSet | None = None,
    negative_rule_set: RuleSet | None = None,
    queue_to_queue: bool = True,
    comment: str = "",
    schedule: bool = True,
    **schedule_params: Any,
) -> Propagation:
    """DBMS_PROPAGATION_ADM.CREATE_PROPAGATION: the propagation subscribes to its source queue
    (from now on the source keeps each new message until the propagation has it) and, unless
    ``schedule`` is False, gets the default schedule (now, no end, at once, latency 3 s).

    ``destination_queue`` as the text ``QUEUE@LINK`` is a remote queue-to-queue propagation:
    the link's site is asked whether the queue exists and takes the source's payloads."""
    _require(user, Capability.CONFIGURE)
    # Every check that does not need another's answer runs, and all that fail are said at once.
    errors = ErrorCollector()
    with errors.check():
        if Propagation.objects.filter(name__iexact=name).exists():
            raise Conflict(f"A propagation named {name} already exists.", field="name")
    remote_queue, link = "", None
    with errors.check():
        if isinstance(destination_queue, str):
            remote_queue, link = _check_remote(source_queue, destination_queue)
            _check_mode(source_queue, link, queue_to_queue)
        else:
            _check_queues(source_queue, destination_queue)
    if isinstance(destination_queue, str):
        destination_queue = None
    with errors.check():
        _check_rule_sets(positive_rule_set, negative_rule_set)
    if schedule:
        with errors.check():
            _schedule_values(**schedule_params)
    with errors.check():
        if source_queue is not None and (
            Subscriber.objects.filter(queue=source_queue, name__iexact=name).exists()
        ):
            raise Conflict(
                f"{source_queue.name} already has a subscriber named {name}; the propagation "
                "subscribes under its own name.",
                field="name",
            )
    errors.raise_any()
    assert source_queue is not None
    address = f"{remote_queue}@{link.name}" if link else getattr(destination_queue, "name", "")
    prop = Propagation(
        name=name,
        source_queue=source_queue,
        destination_queue=destination_queue,
        destination_dblink=link.name if link else "",
        destination_remote_queue=remote_queue,
        positive_rule_set=positive_rule_set,
        negative_rule_set=negative_rule_set,
        queue_to_queue=queue_to_queue,
        comment=comment,
    )
    prop.full_clean(exclude=["subscriber"], validate_unique=False, validate_constraints=False)
    job = _job_to_join(prop, schedule, schedule_params)
    if job is not None:
        prop.enabled = job.propagation.enabled  # started and stopped with its job
    sub = queue_services.subscriber_add(user=None, queue=source_queue, name=name, address=address)
    prop.subscriber = sub
    prop.save()
    _log(user, ChangeAction.CREATE, "propagation_create", prop, after=object_snapshot(prop))
    if job is not None:
        _schedule_join(user, prop, job)
    elif schedule:
        _schedule_create(user, prop, **schedule_params)
    return prop


def _check_mode(source: Queue, link: DatabaseLink, queue_to_queue: bool) -> None:
    """Oracle keeps one mode per (source queue, link): queue-to-dblink propagations share the
    link's job, which a queue-to-queue one from the same source over the same link may not."""
    other = (
        Propagation.objects.filter(source_queue=source, destination_dblink=link.name)
        .exclude(queue_to_queue=queue_to_queue)
        .only("name", "queue_to_queue")
        .first()
    )
    if other is not None:
        mode = "queue-to-queue" if other.queue_to_queue else "queue-to-dblink"
        raise DomainError(
            f"Propagation {other.name} from {source.name} over database link {link.name} is "
            f"{mode}; propagations from one source queue over one link use one mode "
            f"(queue_to_queue={'true' if other.queue_to_queue else 'false'}).",
            field="queue_to_queue",
        )


def _job_to_join(
    prop: Propagation, schedule: bool, params: dict[str, Any]
) -> PropagationSchedule | None:
    """A new queue-to-dblink propagation joins its (source, link) job's schedule when the job
    has one: Oracle has one schedule per job, so schedule parameters given here must be the
    job's (or omitted), else a 400 naming the parameter. Returns the job's schedule, or None
    (the propagation's own schedule is made as usual, and becomes the job's)."""
    if not prop.shares_job:
        return None
    job = (
        PropagationSchedule.objects.select_for_update(of=("self",))
        .select_related("propagation")
        .filter(propagation__in=prop.job_members())
        .order_by("propagation_id")
        .first()
    )
    if job is None:
        return None
    where = f"the schedule of job {prop.job_name} (shared by {job.propagation.name})"
    if not schedule:
        raise DomainError(
            f"{where} exists; a queue-to-dblink propagation joins it (omit schedule=false).",
            field="schedule",
        )
    # Empty values are omitted ones (the page sends every field, empty when left blank).
    asked = {k: v for k, v in params.items() if v is not None and v != ""}
    given = _schedule_values(**asked)
    for key in asked:
        have, want = getattr(job, key), given[key]
        if have != want:
            raise DomainError(
                f"{key} is {have!r} in {where}; a queue-to-dblink propagation shares its "
                "job's schedule: omit it or give the same value (alter the schedule to change "
                "it for all).",
                field=key,
            )
    return job


@transaction.atomic
def propagation_update(*, user: User, propagation: Propagation, **changes: Any) -> Propagation:
    """Change the rule sets or the comment. A running window picks the change up at its next
    heartbeat. Source and destination are fixed: drop and create to move a propagation."""
    _require(user, Capability.CONFIGURE)
    prop = Propagation.objects.select_for_update().get(pk=propagation.pk)
    for key in changes:
        if key not in PROPAGATION_EDITABLE:
            raise DomainError(f"{key} cannot be changed on a propagation.", field=key)
    before = object_snapshot(prop)
    for key, value in changes.items():
        setattr(prop, key, value)
    _check_rule_sets(prop.positive_rule_set, prop.negative_rule_set)
    prop.full_clean(validate_unique=False, validate_constraints=False)
    prop.save()
    _log(user, ChangeAction.UPDATE, "propagation_update", prop, before, object_snapshot(prop))
    return prop


def propagation_delete(*, user: User, propagation: Propagation) -> None:
    """DBMS_PROPAGATION_ADM.DROP_PROPAGATION: the schedule, the run history and the subscriber
    go (the source stops keeping messages for it). A running window stops at its next batch."""
    from django.db import OperationalError
    from psycopg import errors as pg_errors

    _require(user, Capability.CONFIGURE)
    try:
        _propagation_delete(user, propagation)
    except OperationalError as exc:
        # A live batch locks the subscriber's rows in the other order; nothing was dropped.
        if isinstance(exc.__cause__, pg_errors.DeadlockDetected):
            raise Conflict(
                f"Propagation {propagation.name} was moving a batch; nothing was dropped. "
                "Try again (or disable its schedule first)."
            ) from exc
        raise


@transaction.atomic
def _propagation_delete(user: User, propagation: Propagation) -> None:
    prop = Propagation.objects.select_for_update().get(pk=propagation.pk)
    before = object_snapshot(prop)
    sub = prop.subscriber
    PropagationSchedule.objects.filter(propagation=prop).update(run=None)
    # A shared job's run belongs to its first propagation: dropping that one ends the run for
    # all (its rows go with it); the next dispatch starts the job under the next one.
    PropagationSchedule.objects.filter(
        propagation__in=prop.job_members(), run__propagation=prop
    ).update(run=None, next_run_at=timezone.now())
    prop.delete()
    queue_services.subscriber_remove(user=None, subscriber=sub)
    change_log_deletion(
        user=user, verb="propagation_delete", object_type="jobs.propagation", before=before
    )


def _set_propagation_enabled(
    user: User, propagation: Propagation, on: bool, verb: str
) -> Propagation:
    _require(user, Capability.OPERATE)
    prop = Propagation.objects.select_for_update().get(pk=propagation.pk)
    if prop.enabled == on:
        raise Conflict(f"Propagation {prop.name} is already {'started' if on else 'stopped'}.")
    # A queue-to-dblink propagation starts and stops its shared job: all of the job's.
    members = list(prop.job_members().select_for_update())
    for p in members:
        before = object_snapshot(p)
        p.enabled = on
        p.save(update_fields=["enabled", "updated"])
        _log(user, ChangeAction.UPDATE, verb, p, before, object_snapshot(p))
    if on:
        PropagationSchedule.objects.filter(propagation__in=members, enabled=True).update(
            next_run_at=timezone.now()
        )
    prop.refresh_from_db()
    return prop


@transaction.atomic
def propagation_start(*, user: User, propagation: Propagation) -> Propagation:
    """DBMS_PROPAGATION_ADM.START_PROPAGATION."""
    return _set_propagation_enabled(user, propagation, True, "propagation_start")


@transaction.atomic
def propagation_stop(*, user: User, propagation: Propagation) -> Propagation:
    """DBMS_PROPAGATION_ADM.STOP_PROPAGATION: a running window stops at its next heartbeat."""
    return _set_propagation_enabled(user, propagation, False, "propagation_stop")


# --- schedules -----------------------------------------------------------------------------------


def _schedule_values(
    *,
    start_time: datetime | None = None,
    duration: float | None = None,
    next_time: str = "",
    latency: float = 3.0,
    max_failures: int | None = None,
) -> dict[str, Any]:
    next_time = (next_time or "").strip()
    validate_schedule(duration=duration, next_time=next_time, latency=latency)
    # Bounds that keep window arithmetic inside datetime's range (year 9999).
    if start_time is not None and start_time.year > 9000:
        raise DomainError("The start time must be before the year 9000.", field="start_time")
    if duration is not None and duration > MAX_SECONDS:
        raise DomainError("The duration must be at most ten years.", field="duration")
    if latency is not None and latency > MAX_SECONDS:
        raise DomainError("The latency must be at most ten years.", field="latency")
    if max_failures is not None and max_failures < 1:
        raise DomainError("Max failures must be at least 1.", field="max_failures")
    if max_failures is not None and max_failures > PG_INT_MAX:
        raise DomainError(f"Max failures must be at most {PG_INT_MAX}.", field="max_failures")
    return {
        "start_time": start_time or timezone.now(),
        "duration": duration,
        "next_time": next_time,
        "latency": latency,
        "max_failures": max_failures or _cfg()["MAX_FAILURES"],
    }


def _place_window(
    s: PropagationSchedule, now: datetime | None = None, *, after_last: bool = False
) -> None:
    now = now or timezone.now()
    # ``after_last`` (the dispatcher): continue the chain from the window placed last, which is a
    # window of the current parameters (every alter places again from start_time). One step, and
    # a cron window that outlasts the cron step is followed by the next one, never merged.
    origin = s.start_time
    if after_last and s.window_start is not None and s.window_start >= s.start_time:
        origin = s.window_start
    s.window_start, s.window_end = window_at(
        start_time=origin, duration=s.duration, next_time=s.next_time, now=now
    )
    s.next_run_at = max(s.window_start, now)


# The columns a shared job's schedule rows keep alike (every one but its identity).
_JOB_FIELDS = tuple(
    f.attname
    for f in PropagationSchedule._meta.concrete_fields
    if f.name not in ("id", "propagation", "created")
)


def _mirror(s: PropagationSchedule) -> None:
    """A queue-to-dblink job has one schedule (spec/queues.md §2.6: "any change to the
    propagation schedule affects all of the queue-to-dblink propagations from the same source
    queue that use the database link"). Each of its propagations keeps a row, so every page and
    view reads its schedule as for any propagation; the services and the runner write them
    together: whatever one verb did to ``s``, the job's other rows get."""
    prop = s.propagation
    if not prop.shares_job:
        return
    values = {k: getattr(s, k) for k in _JOB_FIELDS}
    values["updated"] = timezone.now()
    PropagationSchedule.objects.filter(propagation__in=prop.job_members()).exclude(pk=s.pk).update(
        **values
    )


def _schedule_join(user: User, prop: Propagation, job: PropagationSchedule) -> None:
    s = PropagationSchedule(propagation=prop, **{k: getattr(job, k) for k in _JOB_FIELDS})
    s.save()
    _log(user, ChangeAction.CREATE, "schedule_propagation", s, after=object_snapshot(s))


def _schedule_create(user: User, prop: Propagation, **params: Any) -> PropagationSchedule:
    s = PropagationSchedule(propagation=prop, **_schedule_values(**params))
    _place_window(s)
    s.full_clean(exclude=["propagation", "run"], validate_unique=False)
    s.save()
    _log(user, ChangeAction.CREATE, "schedule_propagation", s, after=object_snapshot(s))
    # Scheduling one queue-to-dblink propagation schedules its job: all of the job's.
    for other in prop.job_members().exclude(pk=prop.pk).filter(schedule__isnull=True):
        _schedule_join(user, other, s)
    return s


@transaction.atomic
def schedule_create(*, user: User, propagation: Propagation, **params: Any) -> PropagationSchedule:
    """DBMS_AQADM.SCHEDULE_PROPAGATION."""
    _require(user, Capability.CONFIGURE)
    prop = Propagation.objects.select_for_update().get(pk=propagation.pk)
    if PropagationSchedule.objects.filter(propagation__in=prop.job_members()).exists():
        raise Conflict(f"Propagation {prop.name} is already scheduled; alter the schedule instead.")
    return _schedule_create(user, prop, **params)


def _locked_schedule(propagation: Propagation) -> PropagationSchedule:
    """The propagation's schedule row, locked; a shared job's rows are all locked (in id order,
    as every verb takes them) and this propagation's is returned, to be mirrored."""
    if propagation.shares_job:
        # Evaluated for its locks only.
        list(
            PropagationSchedule.objects.select_for_update()
            .filter(propagation__in=propagation.job_members())
            .order_by("pk")
            .values_list("pk", flat=True)
        )
    s = (
        PropagationSchedule.objects.select_for_update()
        .select_related("propagation")
        .filter(propagation_id=propagation.pk)
        .first()
    )
    if s is None:
        raise Conflict(
            f"Propagation {propagation.name} has no schedule (it was unscheduled); schedule it "
            "first."
        )
    return s


@transaction.atomic
def schedule_update(*, user: User, propagation: Propagation, **changes: Any) -> PropagationSchedule:
    """DBMS_AQADM.ALTER_PROPAGATION_SCHEDULE: new window parameters apply at once; a running
    window sees them at its next heartbeat (it ends if its window now ended)."""
    _require(user, Capability.CONFIGURE)
    s = _locked_schedule(propagation)
    for key in changes:
        if key not in SCHEDULE_EDITABLE:
            raise DomainError(f"{key} cannot be altered on a schedule.", field=key)
    before = object_snapshot(s)
    current = {k: getattr(s, k) for k in SCHEDULE_EDITABLE}
    current.update(changes)
    values = _schedule_values(**current)
    for key, value in values.items():
        setattr(s, key, value)
    _place_window(s)
    s.save()
    _mirror(s)
    _log(user, ChangeAction.UPDATE, "alter_propagation_schedule", s, before, object_snapshot(s))
    return s


@transaction.atomic
def schedule_enable(*, user: User, propagation: Propagation) -> PropagationSchedule:
    """DBMS_AQADM.ENABLE_PROPAGATION_SCHEDULE."""
    _require(user, Capability.OPERATE)
    s = _locked_schedule(propagation)
    if s.enabled:
        raise Conflict(f"The schedule of {s.propagation.name} is already enabled.")
    before = object_snapshot(s)
    s.enabled = True
    _place_window(s)
    s.save()
    _mirror(s)
    _log(user, ChangeAction.UPDATE, "enable_propagation_schedule", s, before, object_snapshot(s))
    return s


@transaction.atomic
def schedule_disable(*, user: User, propagation: Propagation) -> PropagationSchedule:
    """DBMS_AQADM.DISABLE_PROPAGATION_SCHEDULE: a running window stops at its next heartbeat."""
    _require(user, Capability.OPERATE)
    s = _locked_schedule(propagation)
    if not s.enabled:
        raise Conflict(f"The schedule of {s.propagation.name} is already disabled.")
    before = object_snapshot(s)
    s.enabled = False
    s.save()
    _mirror(s)
    _log(user, ChangeAction.UPDATE, "disable_propagation_schedule", s, before, object_snapshot(s))
    return s


@transaction.atomic
def schedule_reset(*, user: User, propagation: Propagation) -> PropagationSchedule:
    """Clear the consecutive failures and, if they disabled the schedule, enable it: the next
    window starts at once (MGW's RESET_JOB, Streams' START_PROPAGATION after an abort)."""
    _require(user, Capability.OPERATE)
    s = _locked_schedule(propagation)
    if s.failures == 0:
        state = "enabled" if s.enabled else "disabled"
        raise Conflict(
            f"The schedule of {s.propagation.name} has no failures to reset (it is {state}"
            + (", use enable)." if not s.enabled else ").")
        )
    before = object_snapshot(s)
    s.failures = 0
    s.enabled = True
    _place_window(s)
    s.save()
    _mirror(s)
    _log(user, ChangeAction.UPDATE, "reset_propagation_schedule", s, before, object_snapshot(s))
    return s


@transaction.atomic
def schedule_delete(*, user: User, propagation: Propagation) -> None:
    """DBMS_AQADM.UNSCHEDULE_PROPAGATION: no more windows; a running one stops at its next
    heartbeat. The propagation stays (and its source keeps messages for it)."""
    _require(user, Capability.CONFIGURE)
    s = _locked_schedule(propagation)
    # Unscheduling a queue-to-dblink propagation unschedules its job: all of the job's.
    for row in PropagationSchedule.objects.select_related("propagation").filter(
        propagation__in=s.propagation.job_members()
    ):
        before = object_snapshot(row)
        row.delete()
        change_log_deletion(
            user=user,
            verb="unschedule_propagation",
            object_type="jobs.propagationschedule",
            before={**before, "name": f"schedule of {row.propagation.name}"},
        )


# --- maintenance mode ----------------------------------------------------------------------------


def maintenance_get() -> Maintenance:
    return Maintenance.objects.get_or_create(pk=1)[0]


@transaction.atomic
def maintenance_set(*, user: User, restricted: bool, reason: str = "") -> Maintenance:
    """ALTER SYSTEM ENABLE / DISABLE RESTRICTED SESSION for propagations: while on, no new run
    starts and running ones finish; when it goes off, enabled schedules resume at once."""
    _require(user, Capability.OPERATE)
    m = Maintenance.objects.select_for_update().get_or_create(pk=1)[0]
    if m.restricted == restricted:
        raise Conflict(f"Maintenance mode is already {'on' if restricted else 'off'}.")
    before = object_snapshot(m)
    m.restricted = restricted
    m.since = timezone.now()
    m.by = user.get_username() if user is not None and user.is_authenticated else ""
    m.reason = reason if restricted else ""
    m.save()
    if not restricted:
        PropagationSchedule.objects.filter(enabled=True, run__isnull=True).update(
            next_run_at=timezone.now()
        )
    _log(user, ChangeAction.UPDATE, "maintenance_set", m, before, object_snapshot(m))
    return m


# --- background verbs (Celery beat) --------------------------------------------------------------


def propagation_dispatch(
    *, now: datetime | None = None, limit: int = 500, send: bool = True
) -> list[int]:
    """Open due windows: for every enabled schedule whose next run is due and that has no run,
    create a QUEUED run and send its task after commit to the Celery queue of the instance that
    owns the source queue's queue table (``send=False``: the caller runs it, wherever it is).
    A window whose source has no live owner (no instance up) waits: no run, nothing sent.
    Safe on several beats at once (the schedules are claimed with SKIP LOCKED). Returns the new
    run ids."""
    if maintenance_get().restricted:
        return []
    if send:
        # Owners first, so a failover is seen within a dispatch interval; the refresh stays the
        # one writer of the owner column (serialized by its advisory lock).
        queue_services.queue_table_owners_refresh()
        _resend_moved()
    created: list[int] = []
    routes: dict[int, str] = {}
    with transaction.atomic():
        now = now or timezone.now()
        due = list(
            PropagationSchedule.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("propagation")
            .annotate(owner_name=_live_owner_name("propagation__source_queue__queue_table"))
            .filter(
                enabled=True,
                propagation__enabled=True,
                run__isnull=True,
                next_run_at__lte=now,
            )
            .order_by("next_run_at")[:limit]
        )
        for s in due:
            if s.propagation.shares_job and not _holds_job(s):
                continue  # the job's first row opens its runs, for all its rows
            if s.window_end is None or s.window_end <= now or s.window_start > now:
                _place_window(s, now, after_last=True)
            if s.window_start > now:
                s.save(update_fields=["window_start", "window_end", "next_run_at", "updated"])
                _mirror(s)
                continue
            if send and s.owner_name is None:
                continue  # no live owner instance: the window waits for one
            run = PropagationRun.objects.create(
                propagation=s.propagation,
                sent_at=now if send else None,
                instance=s.owner_name if send else "",
            )
            if send:
                routes[run.pk] = s.owner_name
            s.run = run
            s.save(update_fields=["window_start", "window_end", "run", "updated"])
            _mirror(s)
            created.append(run.pk)
        for run_id in created if send else ():
            # robust: one failed send must not keep the others from going out (the reaper
            # sends a run's task again while it stays QUEUED).
            transaction.on_commit(lambda r=run_id: _send_run(r, routes[r]), robust=True)
    return created


def _live_owner_name(queue_table: str) -> Case:
    """The name of the owner instance of the queue table at path ``queue_table`` while it is
    up, else NULL (a stale owner the refresh has not moved yet gets nothing)."""
    owner = f"{queue_table}__owner_instance"
    return Case(
        When(**{f"{owner}__alive_until__gt": Now()}, then=F(f"{owner}__name")),
        default=None,
        output_field=CharField(),
    )


def _send_run(run_id: int, instance: str) -> None:
    from jobs.tasks import propagation_run

    propagation_run.apply_async(
        (run_id,), queue=instance_queue(instance, settings.AQ_PROPAGATION["QUEUE"])
    )


def _resend_moved() -> int:
    """Send again, to the new owner, the task of each QUEUED run sent to an instance that no
    longer owns its source queue table (or is down): the old owner's queue may have nobody to
    take it, and if it comes back its late task finds the run claimed. Returns how many."""
    now = timezone.now()
    resent = 0
    moved = (
        PropagationRun.objects.filter(state=RunState.QUEUED, sent_at__isnull=False)
        .annotate(owner=_live_owner_name("propagation__source_queue__queue_table"))
        .exclude(owner=None)
        .exclude(instance__iexact=F("owner"))
        .values_list("pk", "instance", "owner")
    )
    for run_id, old, owner in moved:
        if PropagationRun.objects.filter(pk=run_id, state=RunState.QUEUED, instance=old).update(
            instance=owner, sent_at=now
        ):
            try:
                _send_run(run_id, owner)
            except Exception as exc:  # the broker away: the reaper sends it after RESEND_S
                log.warning(
                    "propagation run %s: sending its task to %s failed: %s", run_id, owner, exc
                )
                continue
            resent += 1
    return resent


def _holds_job(s: PropagationSchedule) -> bool:
    """Whether ``s`` is the row of its queue-to-dblink job's first propagation."""
    first = (
        PropagationSchedule.objects.filter(propagation__in=s.propagation.job_members())
        .order_by("propagation_id")
        .values_list("pk", flat=True)
        .first()
    )
    return first == s.pk


def propagation_reap(*, now: datetime | None = None) -> dict[str, int]:
    """Fail RUNNING runs whose worker died (their session's advisory lock is free), give up on
    QUEUED runs whose task never started, mark silent workers stopped, and delete finished runs
    older than RUN_RETENTION_DAYS."""
    from django.db import connection

    now = now or timezone.now()
    cfg = _cfg()
    died = lost = 0
    conn = queue_services.raw_connection()
    for run in PropagationRun.objects.filter(state=RunState.RUNNING).only(
        "pk", "propagation_id", "worker", "pid", "session_id"
    ):
        with transaction.atomic():
            free = conn.execute(
                "SELECT pg_try_advisory_xact_lock(%s, %s)",
                runner.lock_key(conn, run.propagation_id),
            ).fetchone()[0]
            if not free:
                continue  # its worker still holds the propagation: alive (maybe stuck)
            where = f"{run.worker or 'unknown worker'} (pid {run.pid})"
            ended = runner.finish_run(
                conn,
                run.pk,
                state=RunState.FAILED,
                from_states=(RunState.RUNNING,),
                error=(
                    f"Worker {where} died: its database session (backend {run.session_id}) "
                    "ended while the run was RUNNING. The open batch was rolled back; no message "
                    "was lost or moved twice."
                ),
            )
            died += ended is not None
    stale = now - timedelta(seconds=cfg["QUEUED_TIMEOUT_S"])
    resent = _resend_queued(now, stale, cfg)
    for run in PropagationRun.objects.filter(state=RunState.QUEUED, queued_at__lt=stale).only("pk"):
        with transaction.atomic():
            # Only if still QUEUED: its task may have claimed it since the query above.
            runner.finish_run(
                conn,
                run.pk,
                state=RunState.LOST,
                from_states=(RunState.QUEUED,),
                error="Its task did not start within "
                f"{cfg['QUEUED_TIMEOUT_S']:.0f} s (worker busy or message lost); dispatched again.",
            )
            lost += 1

    silent = now - timedelta(seconds=3 * settings.AQ_WORKER_HEARTBEAT_S)
    gone = Worker.objects.filter(last_seen__lt=silent, stopped_at__isnull=True).update(
        stopped_at=now
    )
    # History retention, a bounded slice per pass so the reaper stays quick.
    old = now - timedelta(days=cfg.get("RUN_RETENTION_DAYS", 7))
    expired = list(
        PropagationRun.objects.filter(ended_at__lt=old)
        .exclude(state__in=[RunState.QUEUED, RunState.RUNNING])
        .order_by("id")
        .values_list("pk", flat=True)[:10_000]
    )
    purged, _ = PropagationRun.objects.filter(pk__in=expired).delete()
    connection.close_if_unusable_or_obsolete()
    return {
        "died": died,
        "lost": lost,
        "resent": resent,
        "workers_gone": gone,
        "runs_purged": purged,
    }


def _resend_queued(now: datetime, stale: datetime, cfg: dict[str, Any]) -> int:
    """Send again the task of each run QUEUED for RESEND_S since its last send. A broker that
    restarts without persistence (or a send that failed while it was down) loses the task, and
    the run would otherwise wait QUEUED_TIMEOUT_S to be called LOST; a duplicate is harmless
    (the claim is a conditional UPDATE). It goes to the current owner's queue: after a failover,
    the new owner instance."""

    due = now - timedelta(seconds=cfg["RESEND_S"])
    resent = 0
    for run_id, owner in (
        PropagationRun.objects.filter(state=RunState.QUEUED, sent_at__lt=due, queued_at__gte=stale)
        .annotate(owner=_live_owner_name("propagation__source_queue__queue_table"))
        .values_list("pk", "owner")
    ):
        if owner is None:
            continue  # no live owner: sent once one is up (or dispatched again when LOST)
        if PropagationRun.objects.filter(pk=run_id, state=RunState.QUEUED).update(
            sent_at=now, instance=owner
        ):
            try:
                _send_run(run_id, owner)
            except Exception as exc:  # the broker still away: next pass
                log.warning("propagation run %s: sending its task again failed: %s", run_id, exc)
                continue
            resent += 1
    return resent


@transaction.atomic
def worker_heartbeat(
    *,
    hostname: str,
    pid: int,
    queues: list[str],
    pool: str,
    concurrency: int,
    active: list[dict[str, Any]],
    processed: int,
    started_at: datetime,
    stopping: bool = False,
    instance: str = "",
    host: str = "",
) -> None:
    """Record that a Celery worker is alive (or, ``stopping``, that it shut down cleanly), and
    with it its instance (``AQ_INSTANCE_NAME``), whose UP/DOWN comes from these beats."""
    from instances.services import instance_heartbeat

    now = timezone.now()
    Worker.objects.update_or_create(
        hostname=hostname,
        defaults={
            "pid": pid,
            "queues": queues,
            "pool": pool,
            "concurrency": concurrency,
            "active": active,
            "processed": processed,
            "started_at": started_at,
            "last_seen": now,
            "stopped_at": now if stopping else None,
            "instance": instance[:64],
        },
    )
    if instance:
        # A bad AQ_INSTANCE_NAME must not stop the worker's own beat: say so in its log.
        try:
            with transaction.atomic():
                instance_heartbeat(name=instance, host=host, worker=hostname, stopping=stopping)
        except DomainError as exc:
            log.warning("AQ_INSTANCE_NAME %r: %s", instance, exc.message)


def workers_forget_stopped(*, user: User, older_than: timedelta = timedelta(hours=1)) -> int:
    _require(user, Capability.OPERATE)
    cutoff = timezone.now() - older_than
    n, _ = Worker.objects.filter(Q(stopped_at__lt=cutoff)).delete()
    return n


# --- Spark bulk propagation jobs -----------------------------------------------------------------

SPARK_MAX_EXECUTORS = 256
SPARK_MAX_CORES = 64


def _spark_destinations(
    source: Queue, queues: list[Queue], propagations: list[Propagation]
) -> list[tuple[Queue, Propagation | None]]:
    if not queues and not propagations:
        raise DomainError(
            "Name at least one destination: a queue, or a propagation out of the source.",
            field="destinations",
        )
    out: list[tuple[Queue, Propagation | None]] = []
    seen: set[int] = set()
    for i, p in enumerate(propagations):
        if p.source_queue_id != source.pk:
            raise DomainError(
                f"Propagation {p.name} goes out of {p.source_queue.name}, not {source.name}.",
                field=f"propagations[{i}]",
            )
        if p.destination_queue is None:
            raise DomainError(
                f"Propagation {p.name} goes to {p.destination} at another site; a Spark job "
                "writes only to this site's queues.",
                field=f"propagations[{i}]",
            )
        out.append((p.destination_queue, p))
    for i, q in enumerate(queues):
        where = f"destinations[{i}]"
        if q.pk == source.pk:
            raise DomainError("A queue cannot be its own destination.", field=where)
        if q.kind == QueueKind.EXCEPTION:
            raise DomainError(
                f"{q.name} is an exception queue; messages arrive there only from the engine.",
                field=where,
            )
        why = payload_compatible(source, q)
        if why:
            raise DomainError(why, field=where)
        out.append((q, None))
    for q, _p in out:
        if q.pk in seen:
            raise DomainError(f"{q.name} is named twice as a destination.", field="destinations")
        seen.add(q.pk)
    return out


def _spark_check_condition(condition: str) -> None:
    from queues.engine import QUEUE_RULE_VARIABLES
    from rules.lang import ConditionError, parse, validate

    try:
        # The variables of a dequeue condition: the job selects messages of a queue.
        validate(parse(condition), variables=QUEUE_RULE_VARIABLES)
    except ConditionError as exc:
        raise DomainError(str(exc), field="condition") from exc


@transaction.atomic
def spark_job_submit(
    *,
    user: User,
    source_queue: Queue | None,
    destinations: list[Queue] | None = None,
    propagations: list[Propagation] | None = None,
    selection: str = "ALL_READY",
    enq_time_from: datetime | None = None,
    enq_time_to: datetime | None = None,
    correlation: str = "",
    condition: str = "",
    mode: str = "COPY",
    dry_run: bool = False,
    master: str = "",
    executors: int = 1,
    executor_cores: int = 1,
    executor_memory: str = "1g",
    name: str = "",
) -> Any:
    """Create a bulk propagation job (SUBMITTED) and send its task after commit. Everything the
    job's definition can get wrong is refused here, naming the field, and nothing is written;
    what only the run can find (an empty source, an unreachable master, a worker too small) fails
    the job row with the reason."""
    from jobs import spark_submit
    from jobs.choices import SparkJobPhase, SparkMode, SparkSelection
    from jobs.models import SparkJob, SparkJobDestination

    _require(user, Capability.OPERATE)
    # Every check runs that does not need another's answer; all that fail are said at once.
    errors = ErrorCollector()
    with errors.check():
        if source_queue is None:
            raise DomainError("Choose a source queue.", field="source_queue")
        if source_queue.kind == QueueKind.EXCEPTION and mode == SparkMode.MOVE:
            raise DomainError(
                f"{source_queue.name} is an exception queue: copy from it, or replay it.",
                field="source_queue",
            )
    with errors.check():
        if mode not in SparkMode.values:
            raise DomainError(f"Mode is COPY or MOVE, not {mode!r}.", field="mode")
    with errors.check():
        if selection not in SparkSelection.values:
            raise DomainError(
                f"Selection is one of {', '.join(SparkSelection.values)}, not {selection!r}.",
                field="selection",
            )
    pairs: list[tuple[Queue, Propagation | None]] = []
    if source_queue is not None:
        with errors.check():
            pairs = _spark_destinations(
                source_queue, list(destinations or []), list(propagations or [])
            )
            mc = source_queue.queue_table.multiple_consumers
            if mode == SparkMode.MOVE and mc and any(p is None for _q, p in pairs):
                raise DomainError(
                    f"{source_queue.name} is a multi-consumer queue: a move consumes a "
                    "subscriber's copies, so name propagations out of it (whose subscribers are "
                    "consumed), or copy.",
                    field="destinations",
                )
    with errors.check():
        if selection == SparkSelection.ENQ_TIME_RANGE:
            if enq_time_from is None and enq_time_to is None:
                raise DomainError("Give a start or an end of the range.", field="enq_time_from")
            if enq_time_from and enq_time_to and enq_time_from >= enq_time_to:
                raise DomainError("The range ends before it starts.", field="enq_time_to")
        else:
            enq_time_from = enq_time_to = None
    with errors.check():
        if selection == SparkSelection.CORRELATION:
            if not correlation:
                raise DomainError(
                    "Give a correlation id (% and _ are wildcards).", field="correlation"
                )
        else:
            correlation = ""
    with errors.check():
        if selection == SparkSelection.CONDITION:
            if not condition.strip():
                raise DomainError("Give a rule condition.", field="condition")
            _spark_check_condition(condition)
        else:
            condition = ""
    with errors.check():
        if master:
            spark_submit.check_master_syntax(master)
    with errors.check():
        if not 1 <= executors <= SPARK_MAX_EXECUTORS:
            raise DomainError(f"Executors: 1 to {SPARK_MAX_EXECUTORS}.", field="executors")
    with errors.check():
        if not 1 <= executor_cores <= SPARK_MAX_CORES:
            raise DomainError(
                f"Cores per executor: 1 to {SPARK_MAX_CORES}.", field="executor_cores"
            )
    with errors.check():
        spark_submit.memory_mb(executor_memory)
    errors.raise_any()
    assert source_queue is not None
    now = timezone.now()
    job = SparkJob.objects.create(
        name=name,
        source_queue=source_queue,
        source_name=source_queue.name,
        selection=selection,
        enq_time_from=enq_time_from,
        enq_time_to=enq_time_to,
        correlation=correlation,
        condition=condition,
        mode=mode,
        dry_run=dry_run,
        master=master,
        executors=executors,
        executor_cores=executor_cores,
        executor_memory=executor_memory.strip().lower(),
        attempt=1,
        submitted_at=now,
        phase_at={SparkJobPhase.QUEUED: now.isoformat()},
        submitted_by=user.get_username() if user is not None and user.is_authenticated else "",
    )
    SparkJobDestination.objects.bulk_create(
        SparkJobDestination(
            job=job,
            queue=q,
            queue_name=q.name,
            propagation=p,
            propagation_name=p.name if p is not None else "",
            position=i,
        )
        for i, (q, p) in enumerate(pairs)
    )
    _log(user, ChangeAction.ACTION, "spark_job_submit", job, after=object_snapshot(job))
    _spark_send(job)
    return job


def _spark_send(job: Any) -> None:
    from jobs.spark_submit import config as spark_submit_config
    from jobs.tasks import spark_job_run

    job_id, attempt = job.pk, job.attempt
    transaction.on_commit(
        lambda: spark_job_run.apply_async(
            args=[job_id, attempt], queue=spark_submit_config()["QUEUE"]
        )
    )


def spark_job_claim(job_id: int, attempt: int, *, worker: str, task_id: str) -> Any:
    """The task's claim of its attempt (one conditional UPDATE): None when another task has it,
    the attempt is stale, or it was cancelled before a worker took it."""
    from jobs.choices import SparkJobPhase, SparkJobState
    from jobs.models import SparkJob

    now = timezone.now()
    n = SparkJob.objects.filter(
        pk=job_id, attempt=attempt, state=SparkJobState.SUBMITTED, cancel_requested=False
    ).update(
        state=SparkJobState.RUNNING,
        phase=SparkJobPhase.STARTING,
        # The task's claim: the queued phase began at (re)submission.
        phase_at=JSONObject(
            QUEUED=Func(F("submitted_at"), function="to_jsonb"), STARTING=Value(now.isoformat())
        ),
        started_at=now,
        heartbeat_at=now,
        worker=worker,
        celery_task_id=task_id,
    )
    return SparkJob.objects.get(pk=job_id) if n else None


def spark_job_freeze(job: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Keep the first attempt's spec (shown on the job's page); its ``max_id`` and ``parts``
    bind every later attempt, so part *p* always means the same messages. Returns the kept one."""
    from jobs.models import SparkJob

    SparkJob.objects.filter(pk=job.pk, spec__isnull=True).update(spec=spec)
    job.spec = SparkJob.objects.values_list("spec", flat=True).get(pk=job.pk)
    return job.spec


def spark_job_update(job: Any, **fields: Any) -> int:
    """Progress written by the following task, only while its attempt is RUNNING: 0 rows means
    the row is no longer this attempt's to write (reaped, or re-run)."""
    from jobs.choices import SparkJobState
    from jobs.models import SparkJob

    return SparkJob.objects.filter(
        pk=job.pk, attempt=job.attempt, state=SparkJobState.RUNNING
    ).update(**fields)


def spark_job_finish(
    job: Any,
    *,
    failed: str | None = None,
    cancelled: bool = False,
    log_tail: str = "",
    dry_run_result: dict[str, Any] | None = None,
) -> None:
    from jobs.choices import SparkJobState
    from jobs.models import SparkJob

    state = (
        SparkJobState.CANCELLED
        if cancelled
        else SparkJobState.FAILED
        if failed is not None
        else SparkJobState.SUCCEEDED
    )
    fields: dict[str, Any] = {
        "state": state,
        "phase": state,  # a finished job's phase is its state (SparkJobPhase has them all)
        "finished_at": timezone.now(),
        "error": (failed or "")[:20_000],
        "pid": None,
    }
    if log_tail:
        fields["driver_log_tail"] = log_tail
    if dry_run_result is not None:
        fields["dry_run_result"] = dry_run_result
    if state == SparkJobState.SUCCEEDED:
        fields["tasks_done"] = F("tasks_total")
    SparkJob.objects.filter(
        pk=job.pk, attempt=job.attempt, state__in=[SparkJobState.RUNNING, SparkJobState.SUBMITTED]
    ).update(**fields)


@transaction.atomic
def spark_job_cancel(*, user: User, job: Any) -> Any:
    """Cancel a SUBMITTED or RUNNING job: its task kills the driver's process group and marks it
    CANCELLED; one no worker took yet is CANCELLED at once. Parts already committed stay (a
    re-run goes on from them)."""
    from jobs.choices import SPARK_ACTIVE_STATES, SparkJobState
    from jobs.models import SparkJob

    _require(user, Capability.OPERATE)
    job = SparkJob.objects.select_for_update().get(pk=job.pk)
    if job.state not in SPARK_ACTIVE_STATES:
        raise Conflict(f"Job {job.pk} is {job.state}; only a running job can be cancelled.")
    before = {"state": job.state}
    job.cancel_requested = True
    if job.state == SparkJobState.SUBMITTED:
        job.state = job.phase = SparkJobState.CANCELLED
        job.finished_at = timezone.now()
    job.save(update_fields=["cancel_requested", "state", "phase", "finished_at"])
    _log(
        user,
        ChangeAction.ACTION,
        "spark_job_cancel",
        job,
        before=before,
        after={"state": job.state},
    )
    return job


@transaction.atomic
def spark_job_rerun(*, user: User, job: Any) -> Any:
    """Run a FAILED or CANCELLED job again: a new attempt of the same job, with the same frozen
    parts and keys, so what an earlier attempt committed is skipped, never written twice."""
    from jobs.choices import SparkJobPhase, SparkJobState
    from jobs.models import SparkJob

    _require(user, Capability.OPERATE)
    job = SparkJob.objects.select_for_update().get(pk=job.pk)
    if job.state not in (SparkJobState.FAILED, SparkJobState.CANCELLED):
        raise Conflict(f"Job {job.pk} is {job.state}; only a failed or cancelled job is re-run.")
    before = {"state": job.state, "attempt": job.attempt}
    job.attempt += 1
    job.state = SparkJobState.SUBMITTED
    job.phase = SparkJobPhase.QUEUED
    job.cancel_requested = False
    job.error = ""
    job.app_id = ""
    job.tasks_done = job.tasks_total = 0
    job.started_at = job.finished_at = job.heartbeat_at = None
    job.submitted_at = timezone.now()
    job.phase_at = {SparkJobPhase.QUEUED: job.submitted_at.isoformat()}
    job.save()
    _log(
        user,
        ChangeAction.ACTION,
        "spark_job_rerun",
        job,
        before=before,
        after={"state": job.state, "attempt": job.attempt},
    )
    _spark_send(job)
    return job


def spark_job_reap(*, now: datetime | None = None) -> int:
    """Beat: fail RUNNING jobs whose task stopped writing its heartbeat (its worker died). The
    driver exits by itself when its submitter is gone; a re-run goes on from the committed parts."""
    from jobs.choices import SparkJobState
    from jobs.models import SparkJob
    from jobs.spark_submit import config as spark_submit_config

    now = now or timezone.now()
    stale = now - timedelta(seconds=float(spark_submit_config()["STALE_S"]))
    return SparkJob.objects.filter(state=SparkJobState.RUNNING, heartbeat_at__lt=stale).update(
        state=SparkJobState.FAILED,
        phase=SparkJobState.FAILED,
        finished_at=now,
        error=Concat(
            Value("Its worker "),
            F("worker"),
            Value(" stopped following the job (no heartbeat); re-run it to go on from its parts."),
            output_field=CharField(),
        ),
    )
