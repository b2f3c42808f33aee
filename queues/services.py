"""Writes of the queues app. Each verb is one function, called by the pages, the API, the Celery
tasks and Python clients alike; each runs in one transaction and records the change log.

``user=None`` means an internal caller (a Celery task, a benchmark); otherwise the user's role and,
on secure queue tables, the user's agent and queue privileges are checked here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from psycopg.conninfo import make_conninfo

from core.choices import Capability, ChangeAction
from core.exceptions import Conflict, DomainError, Forbidden
from core.roles import user_can
from core.services import (
    change_log_deletion,
    change_log_record,
    delete_or_refuse,
    object_snapshot,
)
from core.validators import TYPE_NAME_HELP, TYPE_NAME_RE, name_validator
from instances.models import Instance
from instances.ownership import owner_for
from instances.selectors import live_instance_ids
from instances.services import instance_resolve
from queues import engine
from queues.choices import (
    DeliveryMode,
    MessageGrouping,
    Privilege,
    QueueKind,
    SortOrder,
    Visibility,
)
from queues.models import (
    Agent,
    AgentUser,
    Queue,
    QueuePrivilege,
    QueueTable,
    QueueTableOwnerMove,
    Subscriber,
)

User = AbstractBaseUser | AnonymousUser | None


# --- plumbing ------------------------------------------------------------------------------------


def _require(user: User, capability: str) -> None:
    if user is not None and not user_can(user, capability):
        raise Forbidden("Your role does not allow this.")


def raw_connection() -> psycopg.Connection:
    """Django's own psycopg connection, so the engine runs in the service's transaction."""
    connection.ensure_connection()
    return connection.connection  # type: ignore[return-value]


def drop_orphan_storage(using: str = "default", **_: object) -> None:
    """``post_migrate`` receiver: drop message storage whose queue table row is gone (a flush
    removes rows without the service's drop; every transactional test's teardown flushes)."""
    from django.db import connections

    conn = connections[using]
    conn.ensure_connection()
    with transaction.atomic(using=using):
        engine.drop_orphan_storage(conn.connection)


def conninfo() -> str:
    params = connection.get_connection_params()
    keep = {
        k: v for k, v in params.items() if isinstance(v, str | int) and k != "prepare_threshold"
    }
    return make_conninfo(**keep)


def _info(queue: Queue | int | str) -> engine.QueueInfo:
    key = queue.pk if isinstance(queue, Queue) else queue
    return engine.queue_info(raw_connection(), key)


def _log(
    user: User, action: str, verb: str, obj: Any, before: Any = None, after: Any = None, **kw: Any
) -> None:
    change_log_record(
        user=user, action=action, verb=verb, obj=obj, before=before, after=after, **kw
    )


def _username(user: User) -> str:
    return user.get_username() if user is not None and user.is_authenticated else ""


# --- queue tables --------------------------------------------------------------------------------


def exception_queue_name(queue_table_name: str) -> str:
    """AQ names a queue table's default exception queue AQ$_<queue_table>_E."""
    return f"AQ$_{queue_table_name}_E"


# A queue table's name leaves room for its exception queue's AQ$_ and _E within 128 characters
# (cut to 128, the name lost its _E and could collide with another table's).
QUEUE_TABLE_NAME_MAX = 128 - len(exception_queue_name(""))


@transaction.atomic
def queue_table_create(
    *,
    user: User,
    name: str,
    sort_order: str = SortOrder.ENQ_TIME,
    multiple_consumers: bool = False,
    secure: bool = False,
    payload_type: str = "ANY",
    payload_schema: Any = None,
    comment: str = "",
    owner: AbstractBaseUser | None = None,
    message_grouping: str = MessageGrouping.NONE,
    primary_instance: InstanceRef = None,
    secondary_instance: InstanceRef = None,
) -> QueueTable:
    """Create a queue table and its default exception queue ``AQ$_<name>_E``. The sort order
    defaults to ENQ_TIME, as DBMS_AQADM.CREATE_QUEUE_TABLE's ``sort_list`` does; message grouping
    to NONE (TRANSACTIONAL: each enqueuing transaction's messages are one group).

    ``primary_instance``/``secondary_instance``: a name, an INST_ID or None (a name no worker has
    reported is registered DOWN); its owner instance is computed at once and logged."""
    _require(user, Capability.CONFIGURE)
    primary, secondary = _affinity(primary_instance, secondary_instance)
    if message_grouping not in MessageGrouping.values:
        raise DomainError(
            f"Unknown message grouping {message_grouping!r}: use NONE or TRANSACTIONAL.",
            field="message_grouping",
        )
    payload_type = (payload_type or "ANY").strip()
    if not re.match(TYPE_NAME_RE, payload_type):
        raise DomainError(
            f"{payload_type!r} is not a payload type name: {TYPE_NAME_HELP}", field="payload_type"
        )
    if payload_type.upper() != "ANY":
        if payload_schema is None:
            raise DomainError("A typed queue table needs a JSON Schema.", field="payload_schema")
        engine.schema_check(payload_schema)
    elif payload_schema is not None:
        raise DomainError("Payload type ANY takes no schema.", field="payload_schema")
    if QueueTable.objects.filter(name__iexact=name).exists():
        raise Conflict(f"A queue table named {name} already exists.", field="name")
    if owner is None and user is not None and user.is_authenticated:
        owner = user  # type: ignore[assignment]
    qt = QueueTable(
        name=name,
        sort_order=sort_order,
        multiple_consumers=multiple_consumers,
        secure=secure,
        payload_type=payload_type,
        payload_schema=payload_schema,
        comment=comment,
        owner=owner,
        message_grouping=message_grouping,
        primary_instance=primary,
        secondary_instance=secondary,
    )
    qt.full_clean()
    # After the model's own checks (past 128 is theirs to name).
    if len(name) > QUEUE_TABLE_NAME_MAX:
        raise DomainError(
            f"A queue table name has at most {QUEUE_TABLE_NAME_MAX} characters (this one has "
            f"{len(name)}), so that its exception queue AQ$_<name>_E fits in 128.",
            field="name",
        )
    qt.save()
    engine.create_storage(raw_connection(), qt.pk)
    exq_name = exception_queue_name(name)
    if Queue.objects.filter(name__iexact=exq_name).exists():
        raise Conflict(f"A queue named {exq_name} already exists.", field="name")
    Queue.objects.create(
        name=exq_name,
        queue_table=qt,
        kind=QueueKind.EXCEPTION,
        enqueue_enabled=False,
        dequeue_enabled=True,
        comment=f"Default exception queue of {name}",
    )
    _log(user, ChangeAction.CREATE, "queue_table_create", qt, after=object_snapshot(qt))
    _owners_refresh(QueueTable.objects.filter(pk=qt.pk), user=user)
    qt.refresh_from_db(fields=["owner_instance"])
    return qt


QUEUE_TABLE_EDITABLE = (
    "comment",
    "payload_schema",
    "owner",
    "primary_instance",
    "secondary_instance",
)


@transaction.atomic
def queue_table_update(*, user: User, queue_table: QueueTable, **changes: Any) -> QueueTable:
    """Change a queue table's comment, owner, schema or primary and secondary instances
    (ALTER_QUEUE_TABLE; the owner instance is recomputed at once). Sort order, consumer model,
    security and payload type are fixed at creation, as in DBMS_AQADM."""
    _require(user, Capability.CONFIGURE)
    qt = QueueTable.objects.select_for_update().get(pk=queue_table.pk)
    affinity_changed = "primary_instance" in changes or "secondary_instance" in changes
    if affinity_changed:
        changes["primary_instance"], changes["secondary_instance"] = _affinity(
            changes.get("primary_instance", qt.primary_instance),
            changes.get("secondary_instance", qt.secondary_instance),
        )
    fixed = set(changes) - set(QUEUE_TABLE_EDITABLE)
    for key in sorted(fixed):
        if changes[key] != getattr(qt, key):
            raise DomainError(f"{key} is fixed when the queue table is created.", field=key)
    # AQ has no ALTER for message_grouping either: the groups of stored messages would change.
    before = object_snapshot(qt)
    if "payload_schema" in changes and changes["payload_schema"] != qt.payload_schema:
        if not qt.is_typed:
            raise DomainError("Payload type ANY takes no schema.", field="payload_schema")
        if changes["payload_schema"] is None:
            raise DomainError("A typed queue table needs a JSON Schema.", field="payload_schema")
        engine.schema_check(changes["payload_schema"])
    for key in QUEUE_TABLE_EDITABLE:
        if key in changes:
            setattr(qt, key, changes[key])
    qt.full_clean()
    qt.save()
    _log(user, ChangeAction.UPDATE, "queue_table_update", qt, before, object_snapshot(qt))
    if affinity_changed:
        _owners_refresh(QueueTable.objects.filter(pk=qt.pk), user=user)
        qt.refresh_from_db(fields=["owner_instance"])
    return qt


# --- queue table ownership (instances.ownership has the rule) ------------------------------------

InstanceRef = Instance | int | str | None

# pg_try_advisory_xact_lock key of the ownership refresh: one refresher at a time.
_OWNERS_LOCK = 0x41510F15


def _affinity(primary: InstanceRef, secondary: InstanceRef) -> tuple[Instance | None, ...]:
    """The primary and secondary instances a user named, resolved; never the same one."""
    found = tuple(
        value if isinstance(value, Instance) else instance_resolve(value, field=field)
        for value, field in ((primary, "primary_instance"), (secondary, "secondary_instance"))
    )
    if found[0] is not None and found[1] is not None and found[0].pk == found[1].pk:
        raise DomainError(
            f"The secondary instance must differ from the primary instance ({found[0].name}).",
            field="secondary_instance",
        )
    return found


def _owners_refresh(tables: Any, *, user: User) -> list[QueueTableOwnerMove]:
    """Give each of ``tables`` the owner the rule names now; log each move (ownership log and
    change log). The owner is changed with a conditional UPDATE, so two refreshers racing log a
    move once."""
    live = live_instance_ids()
    moves = []
    rows = tables.values_list(
        "pk", "name", "primary_instance_id", "secondary_instance_id", "owner_instance_id"
    )
    for pk, name, primary, secondary, current in rows:
        new = owner_for(
            primary=primary or 0, secondary=secondary or 0, current=current or 0, live=live
        )
        if new.inst_id == (current or 0):
            continue
        if not QueueTable.objects.filter(pk=pk, owner_instance_id=current).update(
            owner_instance_id=new.inst_id or None
        ):
            continue
        moves.append(
            QueueTableOwnerMove.objects.create(
                queue_table_id=pk,
                queue_table_name=name,
                from_instance_id=current,
                to_instance_id=new.inst_id or None,
                reason=new.why,
            )
        )
        change_log_record(
            user=user,
            action=ChangeAction.ACTION,
            verb="queue_table_owner_move",
            object_type="queues.queuetable",
            object_id=pk,
            object_repr=name,
            before={"owner_instance": current or 0},
            after={"owner_instance": new.inst_id, "reason": new.why},
        )
    return moves


@transaction.atomic
def queue_table_owners_refresh() -> list[QueueTableOwnerMove]:
    """Recompute every queue table's owner instance from the instances up now (failover to the
    secondary, failback to the primary, any live instance when both are down) and log the moves.
    The queue monitor runs it each pass; a pass that finds another refresh running skips."""
    if (
        not raw_connection()
        .execute("SELECT pg_try_advisory_xact_lock(%s)", (_OWNERS_LOCK,))
        .fetchone()[0]
    ):
        return []
    return _owners_refresh(QueueTable.objects.all(), user=None)


@transaction.atomic
def queue_table_delete(*, user: User, queue_table: QueueTable) -> None:
    """Drop a queue table and its queues; refused while any of its queues holds a message."""
    _require(user, Capability.CONFIGURE)
    # No enqueue in flight (no foreign key keeps messages out). The storage before the row: an
    # enqueuer's commit may check its counter row's key on the queue, which FOR UPDATE blocks.
    engine.lock_storage(raw_connection(), queue_table.pk)
    qt = QueueTable.objects.select_for_update().get(pk=queue_table.pk)
    count = (
        raw_connection()
        .execute("SELECT count(*) FROM aq_message WHERE queue_table_id = %s", (qt.pk,))
        .fetchone()[0]
    )
    if count:
        raise Conflict(
            f"Queue table {qt.name} still holds {count} message(s); purge its queues first."
        )
    _refuse_if_referenced([q.pk for q in qt.queues.all()], what=f"queue table {qt.name}")
    before = object_snapshot(qt)
    # Normal queues first: they point at exception queues. One delete per kind, not per queue:
    # each delete's checks of the message table cost a plan over every queue table's storage
    # (at 100 queue tables, 100 queues took 6 s one by one).
    for kind in (QueueKind.NORMAL, QueueKind.EXCEPTION):
        delete_or_refuse(qt.queues.filter(kind=kind), what=f"A queue of {qt.name}")
    qt_id = qt.pk
    delete_or_refuse(qt, what=f"Queue table {qt.name}")
    # The queue table is empty (checked above): its storage goes at once, with no DELETE.
    engine.drop_storage(raw_connection(), qt_id)
    change_log_deletion(
        user=user, verb="queue_table_delete", object_type="queues.queuetable", before=before
    )


def _refuse_if_referenced(queue_ids: list[int], *, what: str) -> None:
    """Other apps' references (propagations, gateway jobs) register here as they are built."""
    outside = Queue.objects.filter(exception_queue_id__in=queue_ids).exclude(pk__in=queue_ids)
    first = outside.first()
    if first is not None:
        raise Conflict(f"Queue {first.name} uses a queue of {what} as its exception queue.")


# --- queues --------------------------------------------------------------------------------------

QUEUE_EDITABLE = (
    "exception_queue",
    "max_retries",
    "retry_delay",
    "retention_time",
    "comment",
    "enqueue_enabled",
    "dequeue_enabled",
)


def _check_exception_queue(queue: Queue) -> None:
    exq = queue.exception_queue
    if queue.kind == QueueKind.EXCEPTION:
        if exq is not None:
            raise DomainError("An exception queue has no exception queue.", field="exception_queue")
        return
    if exq is None:
        queue.exception_queue = Queue.objects.get(
            queue_table=queue.queue_table,
            kind=QueueKind.EXCEPTION,
            name__iexact=exception_queue_name(queue.queue_table.name),
        )
        return
    if exq.kind != QueueKind.EXCEPTION:
        raise DomainError(f"{exq.name} is not an exception queue.", field="exception_queue")
    if exq.queue_table_id != queue.queue_table_id:
        raise DomainError(
            "The exception queue must be in the same queue table.", field="exception_queue"
        )


@transaction.atomic
def queue_create(
    *,
    user: User,
    name: str,
    queue_table: QueueTable,
    kind: str = QueueKind.NORMAL,
    exception_queue: Queue | None = None,
    max_retries: int = 5,
    retry_delay: float = 0,
    retention_time: float = 0,
    comment: str = "",
    enqueue_enabled: bool = True,
    dequeue_enabled: bool = True,
) -> Queue:
    """Create a queue in ``queue_table``. Normal queues send failed and expired messages to
    ``exception_queue``, or to the queue table's default exception queue."""
    _require(user, Capability.CONFIGURE)
    if Queue.objects.filter(name__iexact=name).exists():
        raise Conflict(f"A queue named {name} already exists.", field="name")
    queue = Queue(
        name=name,
        queue_table=queue_table,
        kind=kind,
        exception_queue=exception_queue,
        max_retries=max_retries,
        retry_delay=retry_delay,
        retention_time=retention_time,
        comment=comment,
        enqueue_enabled=enqueue_enabled and kind == QueueKind.NORMAL,
        dequeue_enabled=dequeue_enabled,
    )
    queue.full_clean(exclude=["exception_queue"])
    _check_exception_queue(queue)
    queue.save()
    _log(user, ChangeAction.CREATE, "queue_create", queue, after=object_snapshot(queue))
    return queue


@transaction.atomic
def queue_update(*, user: User, queue: Queue, **changes: Any) -> Queue:
    """Change a queue's retry, retention and exception settings, comment or enabled flags."""
    _require(user, Capability.CONFIGURE)
    q = Queue.objects.select_for_update().select_related("queue_table").get(pk=queue.pk)
    for key in sorted(set(changes) - set(QUEUE_EDITABLE)):
        current = getattr(q, key + "_id", None) if key == "queue_table" else getattr(q, key, None)
        new = changes[key].pk if hasattr(changes[key], "pk") else changes[key]
        if new != current:
            raise DomainError(f"{key} cannot be changed after creation.", field=key)
    before = object_snapshot(q)
    for key in QUEUE_EDITABLE:
        if key in changes:
            setattr(q, key, changes[key])
    if q.kind == QueueKind.EXCEPTION and q.enqueue_enabled:
        raise DomainError(
            "Exception queues cannot be enabled for enqueue.", field="enqueue_enabled"
        )
    q.full_clean(exclude=["exception_queue"])
    _check_exception_queue(q)
    q.save()
    _log(user, ChangeAction.UPDATE, "queue_update", q, before, object_snapshot(q))
    return q


@transaction.atomic
def queue_delete(*, user: User, queue: Queue) -> None:
    """Drop a queue; refused while it holds messages or another queue sends exceptions to it."""
    _require(user, Capability.CONFIGURE)
    # No foreign key keeps messages from a deleted queue: wait for enqueues in flight, keep new
    # ones out until this commits (exception copies stay in their queue table). The storage
    # before the row: an enqueuer's commit may check its counter row's key on the queue, which
    # FOR UPDATE would block while this waits for the enqueuer.
    engine.lock_storage(raw_connection(), queue.queue_table_id)
    q = Queue.objects.select_for_update().get(pk=queue.pk)
    count = (
        raw_connection()
        .execute(
            "SELECT count(*) FROM aq_message WHERE queue_id = %s OR original_queue_id = %s",
            (q.pk, q.pk),
        )
        .fetchone()[0]
    )
    if count:
        raise Conflict(
            f"Queue {q.name} still holds or is the origin of {count} message(s); purge first."
        )
    users = Queue.objects.filter(exception_queue=q).exclude(pk=q.pk).first()
    if users is not None:
        raise Conflict(f"Queue {users.name} uses {q.name} as its exception queue.")
    before = object_snapshot(q)
    delete_or_refuse(q, what=f"Queue {q.name}")
    change_log_deletion(user=user, verb="queue_delete", object_type="queues.queue", before=before)


def _set_enabled(
    user: User, queue: Queue, verb: str, *, enqueue: bool | None, dequeue: bool | None
) -> Queue:
    _require(user, Capability.OPERATE)
    q = Queue.objects.select_for_update().get(pk=queue.pk)
    before = {"enqueue_enabled": q.enqueue_enabled, "dequeue_enabled": q.dequeue_enabled}
    if enqueue is not None:
        if enqueue and q.kind == QueueKind.EXCEPTION:
            raise DomainError("Exception queues cannot be enabled for enqueue.", field="enqueue")
        q.enqueue_enabled = enqueue
    if dequeue is not None:
        q.dequeue_enabled = dequeue
    q.save(update_fields=["enqueue_enabled", "dequeue_enabled", "updated"])
    after = {"enqueue_enabled": q.enqueue_enabled, "dequeue_enabled": q.dequeue_enabled}
    _log(user, ChangeAction.ACTION, verb, q, before, after)
    return q


@transaction.atomic
def queue_start(*, user: User, queue: Queue, enqueue: bool = True, dequeue: bool = True) -> Queue:
    """DBMS_AQADM.START_QUEUE: enable enqueue and/or dequeue."""
    return _set_enabled(
        user,
        queue,
        "queue_start",
        enqueue=True if enqueue else None,
        dequeue=True if dequeue else None,
    )


@transaction.atomic
def queue_stop(*, user: User, queue: Queue, enqueue: bool = True, dequeue: bool = True) -> Queue:
    """DBMS_AQADM.STOP_QUEUE: disable enqueue and/or dequeue; messages stay where they are."""
    return _set_enabled(
        user,
        queue,
        "queue_stop",
        enqueue=False if enqueue else None,
        dequeue=False if dequeue else None,
    )


# --- subscribers, agents, privileges -------------------------------------------------------------


@transaction.atomic
def subscriber_add(
    *, user: User, queue: Queue, name: str, address: str = "", rule: str = ""
) -> Subscriber:
    """DBMS_AQADM.ADD_SUBSCRIBER: the subscriber receives messages enqueued from now on; with a
    ``rule``, only those the rule condition is TRUE for (decided at enqueue, in SQL)."""
    _require(user, Capability.CONFIGURE)
    if not queue.queue_table.multiple_consumers or queue.kind == QueueKind.EXCEPTION:
        raise DomainError(
            f"Queue {queue.name} is not a multi-consumer queue; it takes no subscribers.",
            field="queue",
        )
    if queue.subscribers.filter(name__iexact=name).exists():
        raise Conflict(f"{name} already subscribes to {queue.name}.", field="name")
    rule = (rule or "").strip()
    if rule:
        engine.rule_sql(rule, field="rule", prefix="chk_")
    sub = Subscriber(queue=queue, name=name, address=address, rule=rule)
    sub.full_clean()
    sub.save()
    _log(user, ChangeAction.CREATE, "subscriber_add", sub, after=object_snapshot(sub))
    return sub


@transaction.atomic
def subscriber_remove(*, user: User, subscriber: Subscriber) -> None:
    """DBMS_AQADM.REMOVE_SUBSCRIBER: its pending copies are dropped, as in AQ."""
    _require(user, Capability.CONFIGURE)
    sub = Subscriber.objects.select_for_update().get(pk=subscriber.pk)
    before = object_snapshot(sub)
    engine.remove_subscriber_copies(raw_connection(), sub.queue.queue_table_id, sub.pk)
    delete_or_refuse(sub, what=f"Subscriber {sub.name}")
    change_log_deletion(
        user=user, verb="subscriber_remove", object_type="queues.subscriber", before=before
    )


@transaction.atomic
def agent_create(*, user: User, name: str, address: str = "", comment: str = "") -> Agent:
    """DBMS_AQADM.CREATE_AQ_AGENT."""
    _require(user, Capability.CONFIGURE)
    if Agent.objects.filter(name__iexact=name).exists():
        raise Conflict(f"An agent named {name} already exists.", field="name")
    agent = Agent(name=name, address=address, comment=comment)
    agent.full_clean()
    agent.save()
    _log(user, ChangeAction.CREATE, "agent_create", agent, after=object_snapshot(agent))
    return agent


@transaction.atomic
def agent_delete(*, user: User, agent: Agent) -> None:
    """DBMS_AQADM.DROP_AQ_AGENT; its user associations go with it."""
    _require(user, Capability.CONFIGURE)
    before = object_snapshot(agent)
    agent.delete()
    change_log_deletion(user=user, verb="agent_delete", object_type="queues.agent", before=before)


@transaction.atomic
def agent_enable_db_access(*, user: User, agent: Agent, db_user: AbstractBaseUser) -> AgentUser:
    """DBMS_AQADM.ENABLE_DB_ACCESS: ``db_user`` may act as ``agent``."""
    _require(user, Capability.CONFIGURE)
    link, created = AgentUser.objects.get_or_create(agent=agent, user=db_user)
    if created:
        _log(
            user,
            ChangeAction.CREATE,
            "agent_enable_db_access",
            link,
            after={"agent": agent.name, "user": db_user.get_username()},
        )
    return link


@transaction.atomic
def agent_disable_db_access(*, user: User, agent: Agent, db_user: AbstractBaseUser) -> None:
    """DBMS_AQADM.DISABLE_DB_ACCESS."""
    _require(user, Capability.CONFIGURE)
    link = AgentUser.objects.filter(agent=agent, user=db_user).first()
    if link is None:
        raise DomainError(
            f"{db_user.get_username()} is not associated with {agent.name}.", field="user"
        )
    link_id = link.pk
    link.delete()
    _log(
        user,
        ChangeAction.DELETE,
        "agent_disable_db_access",
        None,
        before={"agent": agent.name, "user": db_user.get_username()},
        object_type="queues.agentuser",
        object_id=link_id,
        object_repr=f"{agent.name} ↔ {db_user.get_username()}",
    )


@transaction.atomic
def queue_privilege_grant(
    *, user: User, queue: Queue, grantee: AbstractBaseUser, privilege: str
) -> QueuePrivilege:
    """DBMS_AQADM.GRANT_QUEUE_PRIVILEGE (ENQUEUE, DEQUEUE or ALL)."""
    _require(user, Capability.CONFIGURE)
    if privilege not in Privilege.values:
        raise DomainError(f"Unknown privilege {privilege!r}.", field="privilege")
    grant, created = QueuePrivilege.objects.get_or_create(
        queue=queue, user=grantee, privilege=privilege
    )
    if created:
        _log(
            user,
            ChangeAction.CREATE,
            "queue_privilege_grant",
            grant,
            after={"queue": queue.name, "user": grantee.get_username(), "privilege": privilege},
        )
    return grant


@transaction.atomic
def queue_privilege_revoke(*, user: User, grant: QueuePrivilege) -> None:
    """DBMS_AQADM.REVOKE_QUEUE_PRIVILEGE."""
    _require(user, Capability.CONFIGURE)
    before = {
        "queue": grant.queue.name,
        "user": grant.user.get_username(),
        "privilege": grant.privilege,
    }
    grant_id, grant_repr = grant.pk, str(grant)
    grant.delete()
    _log(
        user,
        ChangeAction.DELETE,
        "queue_privilege_revoke",
        None,
        before=before,
        object_type="queues.queueprivilege",
        object_id=grant_id,
        object_repr=grant_repr,
    )


# --- DBMS_STREAMS_ADM.SET_UP_QUEUE ---------------------------------------------------------------


@dataclass
class SetUpQueueResult:
    queue_table: QueueTable
    queue: Queue
    agent: Agent | None
    queue_table_created: bool
    queue_created: bool
    agent_created: bool


# SET_UP_QUEUE's defaults as Oracle's dictionary shows them (unquoted names are stored upper case);
# names here keep the case they are given.
STREAMS_QUEUE_TABLE = "STREAMS_QUEUE_TABLE"
STREAMS_QUEUE = "STREAMS_QUEUE"


@transaction.atomic
def set_up_queue(
    *,
    user: User,
    queue_table: str = STREAMS_QUEUE_TABLE,
    storage_clause: str | None = None,
    queue_name: str = STREAMS_QUEUE,
    queue_user: str | None = None,
    comment: str | None = None,
) -> SetUpQueueResult:
    """DBMS_STREAMS_ADM.SET_UP_QUEUE in one transaction, through the services above (so the change
    log has each step and a refusal leaves nothing behind).

    A missing ``queue_table`` is created as Streams does: ANY payload, multiple consumers, secure,
    TRANSACTIONAL message grouping, commit-time ordering; an existing one keeps its ordering. The
    queue is created (enabled) unless it exists in that table, in which case a rerun only
    configures ``queue_user``: an agent named after the user is created, or reused if no other
    user is associated with it (an agent of that name already used by another user is refused,
    naming ``queue_user``); then ENABLE_DB_ACCESS and the ENQUEUE and DEQUEUE privileges.
    ``storage_clause`` is accepted and ignored (PostgreSQL has no per-table storage clause here).
    """
    _require(user, Capability.CONFIGURE)
    del storage_clause
    db_user = None
    if queue_user:
        from django.contrib.auth import get_user_model

        # Django user names are case-sensitive: the exact name first; another case only when it
        # names one user (alice and Alice are two users, and guessing would grant the wrong one).
        users = get_user_model().objects
        db_user = users.filter(username=queue_user).first()
        if db_user is None:
            matches = list(users.filter(username__iexact=queue_user)[:2])
            if len(matches) > 1:
                raise DomainError(
                    f"User {queue_user!r} does not exist; users whose names differ only in case "
                    "do: give the exact name.",
                    field="queue_user",
                )
            db_user = matches[0] if matches else None
        if db_user is None:
            raise DomainError(f"User {queue_user!r} does not exist.", field="queue_user")
        try:
            name_validator(db_user.get_username())
        except ValidationError as exc:
            raise DomainError(
                f"User name {db_user.get_username()!r} cannot name an AQ agent: "
                + " ".join(exc.messages),
                field="queue_user",
            ) from exc

    qt = QueueTable.objects.filter(name__iexact=queue_table).first()
    qt_created = qt is None
    if qt is None:
        qt = queue_table_create(
            user=user,
            name=queue_table,
            sort_order=SortOrder.COMMIT_TIME,
            multiple_consumers=True,
            secure=True,
            payload_type="ANY",
            message_grouping=MessageGrouping.TRANSACTIONAL,
            comment=comment or "",
        )
    elif qt.payload_type.upper() != "ANY" or not qt.multiple_consumers:
        raise DomainError(
            f"Queue table {qt.name} is not an ANY-payload multi-consumer queue table, as Streams "
            "queues need.",
            field="queue_table",
        )

    queue = Queue.objects.filter(name__iexact=queue_name).first()
    queue_created = queue is None
    if queue is None:
        queue = queue_create(user=user, name=queue_name, queue_table=qt, comment=comment or "")
    elif queue.queue_table_id != qt.pk or queue.kind != QueueKind.NORMAL:
        raise Conflict(
            f"A queue named {queue.name} already exists in queue table {queue.queue_table.name}.",
            field="queue_name",
        )

    agent, agent_created = None, False
    if db_user is not None:
        name = db_user.get_username()
        agent = Agent.objects.filter(name__iexact=name).first()
        if agent is None:
            agent = agent_create(user=user, name=name.upper())
            agent_created = True
        else:
            others = sorted(agent.users.exclude(pk=db_user.pk).values_list("username", flat=True))
            if others:
                raise Conflict(
                    f"Agent {agent.name} is associated with {', '.join(others)}, not only with "
                    f"{name}: SET_UP_QUEUE reuses an agent only when it is the queue user's alone.",
                    field="queue_user",
                )
        agent_enable_db_access(user=user, agent=agent, db_user=db_user)
        for privilege in (Privilege.ENQUEUE, Privilege.DEQUEUE):
            queue_privilege_grant(user=user, queue=queue, grantee=db_user, privilege=privilege)
    return SetUpQueueResult(qt, queue, agent, qt_created, queue_created, agent_created)


def _check_secure(user: User, queue: Queue, privilege: str, agent_name: str | None) -> None:
    """Secure queue tables: the owner may do anything; anyone else must be a secure queue user
    (associated with an agent), hold the privilege on the queue, and act as one of its agents."""
    qt = queue.queue_table
    if not qt.secure or user is None or user.is_superuser or qt.owner_id == user.pk:
        return
    agents = set(AgentUser.objects.filter(user_id=user.pk).values_list("agent__name", flat=True))
    if not agents:
        raise Forbidden(
            f"{_username(user)} is not a secure queue user: no AQ agent is associated with it."
        )
    if agent_name and agent_name.upper() not in {a.upper() for a in agents}:
        field = "sender" if privilege == Privilege.ENQUEUE else "consumer_name"
        raise Forbidden(f"{_username(user)} may not act as agent {agent_name}.", field=field)
    if not QueuePrivilege.objects.filter(
        queue=queue, user_id=user.pk, privilege__in=[privilege, Privilege.ALL]
    ).exists():
        raise Forbidden(f"{_username(user)} has no {privilege} privilege on queue {queue.name}.")


# --- messages ------------------------------------------------------------------------------------


def _queue_for_message_op(queue: Queue | int | str) -> Queue:
    if isinstance(queue, Queue):
        return Queue.objects.select_related("queue_table").get(pk=queue.pk)
    lookup = {"pk": queue} if isinstance(queue, int) else {"name__iexact": queue}
    try:
        return Queue.objects.select_related("queue_table").get(**lookup)
    except Queue.DoesNotExist as exc:
        raise engine.QueueNotFound(f"Queue {queue!r} does not exist.", field="queue") from exc


def message_enqueue(
    *,
    user: User,
    queue: Queue | int | str,
    messages: Sequence[engine.NewMessage],
    visibility: str | None = None,
    delivery_mode: str = engine.PERSISTENT,
) -> list[int]:
    """Enqueue ``messages`` in one transaction. ON_COMMIT (the default for persistent messages)
    joins the caller's transaction (they appear when it commits); IMMEDIATE commits them at once
    on a connection of their own, like AQ's autonomous enqueue. Buffered messages are always
    IMMEDIATE (AQ refuses ON_COMMIT for them with ORA-25298). A message may carry a Streams
    ``tag`` (hex text, RAW(2000); the engine refuses anything else naming ``tag``)."""
    _require(user, Capability.OPERATE)
    q = _queue_for_message_op(queue)
    for i, msg in enumerate(messages):
        _check_secure(user, q, Privilege.ENQUEUE, msg.sender or None)
        if msg.origin_site is not None or msg.route is not None:
            # Only the engine says where a message has been (engine.receive): a forged origin
            # would defeat loop prevention.
            where = "" if len(messages) == 1 else f"messages[{i}]."
            raise DomainError(
                "A message's origin site and route are set when it arrives from another site; "
                "an enqueue cannot give them.",
                field=f"{where}{'origin_site' if msg.origin_site is not None else 'route'}",
            )
    if not messages:
        _check_secure(user, q, Privilege.ENQUEUE, None)
    if delivery_mode not in DeliveryMode.values:
        raise DomainError(
            f"Unknown delivery mode {delivery_mode!r}: PERSISTENT or BUFFERED.",
            field="delivery_mode",
        )
    if visibility not in (None, *Visibility.values):
        raise DomainError(f"Unknown visibility {visibility!r}.", field="visibility")
    if delivery_mode == engine.BUFFERED:
        if visibility == Visibility.ON_COMMIT:
            raise DomainError(
                "ORA-25298: Only immediate visibility mode supported for buffered message "
                "enqueue or dequeue: a buffered message is never part of a transaction.",
                field="visibility",
            )
        # The engine runs it on its own connection, outside any transaction here.
        conn = raw_connection()
        return engine.enqueue(
            conn,
            engine.queue_info(conn, q.pk),
            messages,
            user=_username(user),
            delivery_mode=engine.BUFFERED,
        )
    if visibility == Visibility.IMMEDIATE:
        with psycopg.connect(conninfo()) as own:
            info = engine.queue_info(own, q.pk)
            ids = engine.enqueue(own, info, messages, user=_username(user))
            own.commit()
            return ids
    with transaction.atomic():
        conn = raw_connection()
        return engine.enqueue(conn, engine.queue_info(conn, q.pk), messages, user=_username(user))


@dataclass
class DequeueRequest:
    mode: str = engine.REMOVE
    navigation: str = engine.NEXT_MESSAGE
    consumer_name: str | None = None
    correlation: str | None = None
    msgid: int | None = None
    batch: int = 1
    wait: float = 0.0
    cursor: str | None = None
    lease_seconds: float = engine.DEFAULT_LEASE_S
    condition: str | None = None
    delivery_mode: str = engine.PERSISTENT
    # TRANSACTIONAL queue tables: the group this consumer owns (from the previous answer).
    group_token: str | None = None


def message_dequeue(
    *, user: User, queue: Queue | int | str, request: DequeueRequest
) -> list[engine.DequeuedMessage]:
    """Dequeue (REMOVE, LOCKED or BROWSE) as ``request`` says; see :func:`queues.engine.dequeue`.
    BROWSE needs only the VIEW capability."""
    _require(user, Capability.VIEW if request.mode == engine.BROWSE else Capability.OPERATE)
    q = _queue_for_message_op(queue)
    _check_secure(user, q, Privilege.DEQUEUE, request.consumer_name)
    after = engine.Position.parse(request.cursor) if request.cursor else None
    listener = engine.thread_listener(conninfo()) if request.wait > 0 else None
    with transaction.atomic():
        conn = raw_connection()
        return engine.dequeue(
            conn,
            engine.queue_info(conn, q.pk),
            mode=request.mode,
            navigation=request.navigation,
            consumer=request.consumer_name,
            correlation=request.correlation,
            msgid=request.msgid,
            batch=request.batch,
            wait=request.wait,
            after=after,
            lease_seconds=request.lease_seconds,
            listener=listener,
            condition=request.condition or None,
            delivery_mode=request.delivery_mode,
            group_token=request.group_token or None,
        )


@transaction.atomic
def message_ack(
    *,
    user: User,
    queue: Queue | int | str,
    msgid: int,
    lock_token: str,
    consumer_name: str | None = None,
) -> engine.DequeuedMessage:
    """Finish a LOCKED dequeue: the message is consumed."""
    _require(user, Capability.OPERATE)
    q = _queue_for_message_op(queue)
    _check_secure(user, q, Privilege.DEQUEUE, consumer_name)
    return engine.ack(raw_connection(), _info(q), msgid, lock_token, consumer=consumer_name)


@transaction.atomic
def message_release(
    *,
    user: User,
    queue: Queue | int | str,
    msgid: int,
    lock_token: str,
    consumer_name: str | None = None,
    failed: bool = True,
) -> None:
    """Give back a LOCKED message; a failure counts an attempt (retry delay, exception queue)."""
    _require(user, Capability.OPERATE)
    q = _queue_for_message_op(queue)
    _check_secure(user, q, Privilege.DEQUEUE, consumer_name)
    engine.release(
        raw_connection(), _info(q), msgid, lock_token, consumer=consumer_name, failed=failed
    )


def message_process(
    *, user: User, queue: Queue | int | str, handler: Any, request: DequeueRequest | None = None
) -> engine.DequeuedMessage | None:
    """Dequeue one message in REMOVE mode and run ``handler(message)`` in the same transaction.
    If the handler raises, the dequeue rolls back and the attempt is counted in a transaction of
    its own (AQ's rolled-back dequeue), then the error propagates."""
    req = request or DequeueRequest()
    try:
        with transaction.atomic():
            got = message_dequeue(user=user, queue=queue, request=req)
            if not got:
                return None
            handler(got[0])
            return got[0]
    except Exception:
        if "got" in locals() and got:
            with transaction.atomic():
                conn = raw_connection()
                if req.consumer_name:
                    _fail_consumer(conn, got[0].id, queue, req.consumer_name)
                else:
                    engine.fail_attempts(conn, [got[0].id])
        raise


def _fail_consumer(
    conn: psycopg.Connection, msgid: int, queue: Queue | int | str, consumer: str
) -> None:
    info = engine.queue_info(conn, _queue_for_message_op(queue).pk)
    sub = engine.subscriber_id(conn, info, consumer)
    # The rolled-back dequeue put the consumer row back; count the attempt on it.
    row = conn.execute(
        "SELECT id FROM aq_message_consumer WHERE message_id = %s AND subscriber_id = %s",
        (msgid, sub),
    ).fetchone()
    if row:
        engine.fail_consumer_attempts(conn, [row[0]])


@transaction.atomic
def queue_purge(*, user: User, queue: Queue, condition: engine.PurgeCondition) -> int:
    """DBMS_AQADM.PURGE_QUEUE_TABLE for one queue: remove the messages matching ``condition``."""
    _require(user, Capability.OPERATE)
    removed = engine.purge(raw_connection(), _info(queue), condition)
    _log(
        user,
        ChangeAction.ACTION,
        "queue_purge",
        queue,
        before={"condition": _purge_repr(condition)},
        after={"removed": removed},
    )
    return removed


def _purge_repr(c: engine.PurgeCondition) -> dict[str, Any]:
    return {
        "states": list(c.states),
        "correlation": c.correlation,
        "ids": list(c.ids) if c.ids is not None else None,
        "enqueued_before": c.enqueued_before.isoformat() if c.enqueued_before else None,
        "priority": c.priority,
        "all": c.is_all(),
    }


REPLAY_CHUNK = 500


def exception_queue_replay(*, user: User, queue: Queue, ids: Sequence[int] | None = None) -> int:
    """Move messages of an exception queue back to their original queues, marked replayed.
    Selected ids move in one transaction; "all" moves in chunks of 500, each its own
    transaction, so a huge replay never holds one long transaction and each message moves
    exactly once."""
    _require(user, Capability.OPERATE)
    if queue.kind != QueueKind.EXCEPTION:
        raise engine.InvalidMessage(f"{queue.name} is not an exception queue.", field="queue")
    if ids is not None:
        with transaction.atomic():
            moved = engine.replay(raw_connection(), _info(queue), ids)
            _log(
                user,
                ChangeAction.ACTION,
                "exception_queue_replay",
                queue,
                before={"ids": list(ids)},
                after={"replayed": len(moved)},
            )
            return len(moved)
    total = 0
    while True:
        with transaction.atomic():
            conn = raw_connection()
            chunk = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM aq_message WHERE queue_id = %s AND state = 'EXPIRED' "
                    "AND original_queue_id IS NOT NULL ORDER BY id LIMIT %s",
                    (queue.pk, REPLAY_CHUNK),
                ).fetchall()
            ]
            if not chunk:
                break
            total += len(engine.replay(conn, _info(queue), chunk))
    with transaction.atomic():
        _log(
            user,
            ChangeAction.ACTION,
            "exception_queue_replay",
            queue,
            before={"ids": "all"},
            after={"replayed": total},
        )
    return total


@transaction.atomic
def queue_monitor_run(*, tables: Sequence[int] | None = None) -> engine.MonitorReport:
    """One pass of the queue monitor (delays, expirations, leases, retention, spilling) over
    the messages of ``tables`` (queue table ids; None: every queue table)."""
    return engine.monitor_run(raw_connection(), tables=tables)


def queue_storage_vacuum() -> list[engine.Bloat]:
    """The queue monitor's housekeeping: VACUUM (ANALYZE) the storage leaves holding many dead
    rows, or many rows changed since their last ANALYZE (``AQ_VACUUM_MIN_DEAD``,
    ``AQ_VACUUM_DEAD_RATIO``: see engine.bloated). VACUUM cannot run in a transaction,
    so this is called outside one (Django's connection is then in autocommit mode)."""
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("queue_storage_vacuum must run outside a transaction")
    conn = raw_connection()
    found = engine.bloated(
        conn, min_dead=settings.AQ_VACUUM_MIN_DEAD, dead_ratio=settings.AQ_VACUUM_DEAD_RATIO
    )
    engine.vacuum(conn, [b.table for b in found])
    return found
