"""Writes of the parallel app: logical queues (create, assemble from existing queues, comment,
rebuild, drop), the partitions' purpose and instances, enqueue/dequeue on a logical queue and the
client sessions those calls register (the only writer of aq_logical_queue_session). The
physical queues and queue tables are made, altered and dropped only through queues.services,
inside the same transaction, so a refused step leaves nothing behind.

``user=None`` means an internal caller (a benchmark, a Celery task)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.choices import Capability, ChangeAction
from core.exceptions import Conflict, DomainError, Forbidden
from core.roles import user_can
from core.services import change_log_deletion, change_log_record, object_snapshot
from core.validators import name_validator
from instances.choices import InstanceStatus
from instances.models import Instance
from instances.selectors import live_instance_ids, up_expression
from instances.services import instance_resolve
from parallel import engine
from parallel.models import LogicalQueue, LogicalQueuePartition, LogicalQueueSession, SessionMode
from queues import engine as queue_engine
from queues import services as qs
from queues.choices import DeliveryMode, QueueKind, SortOrder
from queues.models import Queue, QueueTable

User = AbstractBaseUser | AnonymousUser | None

MAX_PARTITIONS = 256
NAME_MAX = 100  # leaves room for _P<n>_QT and the exception queue's AQ$_…_E within 128
KEY_MAX = 128


SELECTOR_REFUSAL = (
    "A logical queue takes no selector on dequeue: its messages are spread over partitions bound "
    "to different instances, so the one you select may be on another instance (S003: 'there "
    "should be no selector criteria for dequeuing messages'). Dequeue from the physical queue "
    "instead."
)
BUFFERED_REFUSAL = (
    "A logical queue takes persistent messages only: parallel-queue failover works for "
    "persistent queues, and S003 does not recommend buffered queues in this configuration."
)


def _require(user: User, capability: str) -> None:
    if user is not None and not user_can(user, capability):
        raise Forbidden("Your role does not allow this.")


def partition_names(name: str, position: int) -> tuple[str, str]:
    """(queue, queue table) of partition ``position``: named without any instance id (S003), as
    the instance a partition is bound to may change."""
    return f"{name}_P{position}", f"{name}_P{position}_QT"


def _name_check(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise DomainError("Give the logical queue a name.", field="name")
    name = name.strip()
    if len(name) > NAME_MAX:
        raise DomainError(
            f"A logical queue name has at most {NAME_MAX} characters (this one has "
            f"{len(name)}), so that its partitions' names fit.",
            field="name",
        )
    try:
        name_validator(name)
    except ValidationError as exc:
        raise DomainError(exc.messages[0], field="name") from exc
    return name


def _instances(value: Any) -> list[Instance]:
    """The instances a user named, in order (a name no worker has reported is registered DOWN,
    with a warning, as queue tables do); None: every known instance by INST_ID."""
    if value is None:
        return list(Instance.objects.order_by("inst_id"))
    if not isinstance(value, list | tuple):
        raise DomainError("Give a list of instance names or INST_IDs.", field="instances")
    if not value:
        raise DomainError("Name at least one instance (or leave it out).", field="instances")
    found: list[Instance] = []
    for i, item in enumerate(value):
        field = f"instances[{i}]"
        inst = item if isinstance(item, Instance) else instance_resolve(item, field=field)
        if inst is None:
            raise DomainError("Name an instance (none is not an instance).", field=field)
        if any(f.pk == inst.pk for f in found):
            raise DomainError(f"Instance {inst.name} is named twice.", field=field)
        found.append(inst)
    return found


def _partitions_count(value: Any, instances: int) -> int:
    if value is None:  # 3N; with no instance known yet, the paper's example's 3
        return engine.PARTITIONS_PER_INSTANCE * max(1, instances)
    if isinstance(value, bool) or not isinstance(value, int):
        raise DomainError("Give a whole number of partitions.", field="partitions")
    if not 1 <= value <= MAX_PARTITIONS:
        raise DomainError(
            f"A logical queue has 1 to {MAX_PARTITIONS} partitions, not {value}.",
            field="partitions",
        )
    return value


# --- logical queues ------------------------------------------------------------------------------


@transaction.atomic
def logical_queue_create(
    *,
    user: User,
    name: str,
    partitions: int | None = None,
    instances: Sequence[Any] | None = None,
    sort_order: str = SortOrder.ENQ_TIME,
    comment: str = "",
    purpose: str = "",
) -> LogicalQueue:
    """Create logical queue ``name`` of ``partitions`` physical queues (default 3 times the
    instances, the paper's 3N), each in its own queue table ``<name>_P<i>_QT`` with primary and
    secondary instances in a ring over ``instances`` (default: every known instance), and its
    mapping rows. One transaction: a refused partition leaves nothing."""
    _require(user, Capability.CONFIGURE)
    name = _name_check(name)
    if LogicalQueue.objects.filter(name__iexact=name).exists():
        raise DomainError(f"A logical queue named {name} already exists.", field="name")
    insts = _instances(instances)
    count = _partitions_count(partitions, len(insts))
    if sort_order not in SortOrder.values:
        raise DomainError(f"Unknown sort order {sort_order!r}.", field="sort_order")
    for position in range(1, count + 1):
        queue_name, table_name = partition_names(name, position)
        for model, what, wanted in (
            (Queue, "queue", queue_name),
            (QueueTable, "queue table", table_name),
        ):
            taken = model.objects.filter(name__iexact=wanted).values_list("name", flat=True).first()
            if taken is not None:
                raise DomainError(
                    f"Partition {position} would be {what} {wanted}, and {what} {taken} exists "
                    "already: choose another name.",
                    field="name",
                )
    lq = LogicalQueue.objects.create(name=name, comment=comment)
    for position, (primary, secondary) in enumerate(engine.ring(count, insts), start=1):
        queue_name, table_name = partition_names(name, position)
        what = f"Partition {position} of logical queue {name}"
        qt = qs.queue_table_create(
            user=user,
            name=table_name,
            sort_order=sort_order,
            primary_instance=primary,
            secondary_instance=secondary,
            comment=what,
        )
        queue = qs.queue_create(user=user, name=queue_name, queue_table=qt, comment=what)
        LogicalQueuePartition.objects.create(
            logical_queue=lq, position=position, queue=queue, purpose=purpose
        )
    change_log_record(
        user=user,
        action=ChangeAction.CREATE,
        verb="logical_queue_create",
        obj=lq,
        after={
            **object_snapshot(lq),
            "partitions": count,
            "instances": [i.name for i in insts],
        },
    )
    return lq


@transaction.atomic
def logical_queue_update(*, user: User, logical_queue: LogicalQueue, comment: str) -> LogicalQueue:
    _require(user, Capability.CONFIGURE)
    lq = LogicalQueue.objects.select_for_update().get(pk=logical_queue.pk)
    before = object_snapshot(lq)
    lq.comment = comment
    lq.save(update_fields=["comment", "updated"])
    change_log_record(
        user=user,
        action=ChangeAction.UPDATE,
        verb="logical_queue_update",
        obj=lq,
        before=before,
        after=object_snapshot(lq),
    )
    return lq


@transaction.atomic
def logical_partition_update(
    *, user: User, partition: LogicalQueuePartition, purpose: str
) -> LogicalQueuePartition:
    """The administrator's annotation of a partition (the paper's user-maintained view)."""
    _require(user, Capability.CONFIGURE)
    _purpose_check(purpose)
    part = LogicalQueuePartition.objects.select_for_update().get(pk=partition.pk)
    before = {"purpose": part.purpose}
    part.purpose = purpose
    part.save(update_fields=["purpose"])
    change_log_record(
        user=user,
        action=ChangeAction.UPDATE,
        verb="logical_partition_update",
        obj=part.logical_queue,
        before=before,
        after={"purpose": purpose, "position": part.position},
    )
    return part


@transaction.atomic
def logical_queue_delete(*, user: User, logical_queue: LogicalQueue) -> None:
    """Drop a logical queue with its physical queues and queue tables; refused (and nothing
    dropped) while any partition holds a message."""
    _require(user, Capability.CONFIGURE)
    lq = LogicalQueue.objects.select_for_update().get(pk=logical_queue.pk)
    before = object_snapshot(lq)
    tables = [p.queue.queue_table for p in lq.partitions.select_related("queue__queue_table")]
    LogicalQueuePartition.objects.filter(logical_queue=lq).delete()
    for qt in tables:
        qs.queue_table_delete(user=user, queue_table=qt)
    lq.delete()
    change_log_deletion(
        user=user, verb="logical_queue_delete", object_type="parallel.logicalqueue", before=before
    )


@dataclass(frozen=True)
class RebuildResult:
    instances: list[str]
    changed: list[str]  # the partitions' queue names whose instances moved


@transaction.atomic
def logical_queue_rebuild(
    *, user: User, logical_queue: LogicalQueue, instances: Sequence[Any] | None = None
) -> RebuildResult:
    """Recompute a balanced ring after a lasting change of instances (S003's queue table
    recreation): partition i gets instance i mod M as primary and the next as secondary, over
    ``instances`` (default: the instances up now, else every known one). Positions, and so the
    key → partition mapping, do not change; each queue table is altered through
    queues.services (owner recomputed and logged there)."""
    _require(user, Capability.CONFIGURE)
    lq = LogicalQueue.objects.select_for_update().get(pk=logical_queue.pk)
    if instances is None:
        live = live_instance_ids()
        insts = (
            list(Instance.objects.filter(pk__in=live).order_by("inst_id"))
            if live
            else _instances(None)
        )
    else:
        insts = _instances(instances)
    parts = list(lq.partitions.select_related("queue__queue_table").order_by("position"))
    changed = []
    for part, (primary, secondary) in zip(parts, engine.ring(len(parts), insts), strict=True):
        if _instances_set(user, part.queue.queue_table, primary, secondary):
            changed.append(part.queue.name)
    change_log_record(
        user=user,
        action=ChangeAction.ACTION,
        verb="logical_queue_rebuild",
        obj=lq,
        after={"instances": [i.name for i in insts], "changed": changed},
    )
    return RebuildResult([i.name for i in insts], changed)


def _instances_set(
    user: User, qt: QueueTable, primary: Instance | None, secondary: Instance | None
) -> bool:
    """Give a partition's queue table this primary and secondary (through queues.services,
    which recomputes and logs the owner); False when it has them already."""
    want = (primary.pk if primary else None, secondary.pk if secondary else None)
    if (qt.primary_instance_id, qt.secondary_instance_id) == want:
        return False
    # Clear first: swapping two instances would otherwise pass through primary == secondary.
    qs.queue_table_update(
        user=user, queue_table=qt, primary_instance=primary, secondary_instance=None
    )
    qs.queue_table_update(user=user, queue_table=qt, secondary_instance=secondary)
    return True


def _purpose_check(purpose: Any, *, field: str = "purpose") -> str:
    if not isinstance(purpose, str):
        raise DomainError("The purpose is text.", field=field)
    if len(purpose) > 200:
        raise DomainError("A purpose has at most 200 characters.", field=field)
    return purpose


@dataclass(frozen=True)
class PartitionSpec:
    """One partition of :func:`logical_queue_assemble`: an existing queue at ``position``, the
    administrator's purpose and, when given (not None), its queue table's instances."""

    position: int
    queue: str
    purpose: str = ""
    primary_instance: Any = None
    secondary_instance: Any = None
    instances_given: bool = False


@transaction.atomic
def logical_queue_assemble(
    *, user: User, name: str, partitions: Sequence[PartitionSpec], comment: str = ""
) -> LogicalQueue:
    """A logical queue over queues that exist already (a definitions import: the document
    recreates the queue tables and queues first, then this mapping). Each queue is a normal
    queue that is no other logical queue's partition; positions are 1..N, each once. With
    ``instances_given``, a partition's queue table gets the primary and secondary named."""
    _require(user, Capability.CONFIGURE)
    name = _name_check(name)
    if LogicalQueue.objects.filter(name__iexact=name).exists():
        raise DomainError(f"A logical queue named {name} already exists.", field="name")
    if not partitions:
        raise DomainError("A logical queue has at least one partition.", field="partitions")
    if len(partitions) > MAX_PARTITIONS:
        raise DomainError(
            f"A logical queue has 1 to {MAX_PARTITIONS} partitions.", field="partitions"
        )
    seen: set[int] = set()
    for i, spec in enumerate(partitions):
        ok = isinstance(spec.position, int) and not isinstance(spec.position, bool)
        if not ok or not 1 <= spec.position <= len(partitions) or spec.position in seen:
            raise DomainError(
                f"Positions are 1 to {len(partitions)}, each once ({spec.position!r}).",
                field=f"partitions[{i}].position",
            )
        seen.add(spec.position)
    queues: list[Queue] = []
    for i, spec in enumerate(partitions):
        at = f"partitions[{i}]"
        queue = Queue.objects.select_related("queue_table").filter(name=spec.queue).first()
        if queue is None:
            raise DomainError(f"No queue named {spec.queue}.", field=f"{at}.queue")
        if queue.kind != QueueKind.NORMAL:
            raise DomainError(f"{queue.name} is an exception queue.", field=f"{at}.queue")
        taken = LogicalQueuePartition.objects.filter(queue=queue).select_related("logical_queue")
        other = taken.first()
        if other is not None or any(q.pk == queue.pk for q in queues):
            owner = other.logical_queue.name if other else name
            raise DomainError(
                f"Queue {queue.name} is already a partition of logical queue {owner}.",
                field=f"{at}.queue",
            )
        _purpose_check(spec.purpose, field=f"{at}.purpose")
        queues.append(queue)
    lq = LogicalQueue.objects.create(name=name, comment=comment)
    for i, (spec, queue) in enumerate(zip(partitions, queues, strict=True)):
        LogicalQueuePartition.objects.create(
            logical_queue=lq, position=spec.position, queue=queue, purpose=spec.purpose
        )
        if spec.instances_given:
            logical_partition_instances_set(
                user=user,
                queue_table=queue.queue_table,
                primary_instance=spec.primary_instance,
                secondary_instance=spec.secondary_instance,
                field=f"partitions[{i}]",
            )
    change_log_record(
        user=user,
        action=ChangeAction.CREATE,
        verb="logical_queue_assemble",
        obj=lq,
        after={**object_snapshot(lq), "partitions": [q.name for q in queues]},
    )
    return lq


@transaction.atomic
def logical_partition_instances_set(
    *,
    user: User,
    queue_table: QueueTable,
    primary_instance: Any,
    secondary_instance: Any,
    field: str = "",
) -> bool:
    """A partition's primary and secondary instance (names, INST_IDs or None), set on its queue
    table through queues.services; False when it has them already."""
    _require(user, Capability.CONFIGURE)
    prefix = f"{field}." if field else ""
    primary = instance_resolve(primary_instance, field=f"{prefix}primary_instance")
    secondary = instance_resolve(secondary_instance, field=f"{prefix}secondary_instance")
    return _instances_set(user, QueueTable.objects.get(pk=queue_table.pk), primary, secondary)


# --- messages ------------------------------------------------------------------------------------


def _partitions(lq: LogicalQueue) -> list[LogicalQueuePartition]:
    return list(
        lq.partitions.select_related("queue__queue_table__owner_instance").order_by("position")
    )


def _active_on(parts: list[LogicalQueuePartition], instance: str) -> list[LogicalQueuePartition]:
    name = instance.lower()
    return [
        p
        for p in parts
        if p.queue.queue_table.owner_instance is not None
        and p.queue.queue_table.owner_instance.name.lower() == name
    ]


def partition_for(
    *,
    logical_queue: LogicalQueue,
    instance: str | None = None,
    key: str | None = None,
    keep: str | None = None,
    rng: random.Random | None = None,
) -> LogicalQueuePartition:
    """The partition an operation goes to.

    - ``key`` (an ordered group): always the same partition, by a stable hash of the key, on
      whichever instance owns it.
    - otherwise the partitions whose active (owner) instance is ``instance`` (fixed-client mode)
      or this process's ``AQ_INSTANCE_NAME`` (server mode, the paper's
      ``sys_context('USERENV','INSTANCE')``): ``keep`` (the partition the session chose before)
      while it is still active there, else one picked at random."""
    parts = _partitions(logical_queue)
    if key is not None:
        if not isinstance(key, str) or not key or len(key) > KEY_MAX:
            raise DomainError(f"A group key is text of 1 to {KEY_MAX} characters.", field="key")
        return parts[engine.key_position(key, len(parts)) - 1]
    if instance is not None and (not isinstance(instance, str) or not instance.strip()):
        raise DomainError("Name the instance, or leave it out (server mode).", field="instance")
    here = (instance or settings.AQ_INSTANCE_NAME).strip()
    if keep is not None:
        kept = [p for p in parts if keep.lower() in (p.queue.name.lower(), str(p.position))]
        if not kept:
            raise DomainError(
                f"{keep} is not a partition of logical queue {logical_queue.name}.",
                field="partition",
            )
    candidates = _active_on(parts, here)
    if not candidates:
        active = sorted(
            {
                p.queue.queue_table.owner_instance.name
                for p in parts
                if p.queue.queue_table.owner_instance
            }
        )
        raise DomainError(
            f"No partition of logical queue {logical_queue.name} is active on instance {here} "
            f"(active on: {', '.join(active) or 'no instance: none is up'}).",
            field="instance",
        )
    if keep is not None and kept[0] in candidates:
        return kept[0]
    return engine.pick(candidates, rng)


def logical_queue_resolve(value: LogicalQueue | int | str) -> LogicalQueue:
    if isinstance(value, LogicalQueue):
        return value
    lookup = {"pk": value} if isinstance(value, int) else {"name__iexact": value}
    found = LogicalQueue.objects.filter(**lookup).first()
    if found is None:
        raise DomainError(f"Logical queue {value!r} does not exist.", field="logical_queue")
    return found


@dataclass(frozen=True)
class Placed:
    """Where an operation went: the partition (its queue name and position), what it did and
    the client session it counted for (None: an internal caller, no session)."""

    partition: LogicalQueuePartition
    ids: list[int]
    messages: list[queue_engine.DequeuedMessage]
    session: uuid.UUID | None = None


# --- client sessions and the failover notice -----------------------------------------------------


class PartitionMoved(Conflict):
    """The partition a session kept is no longer active on the instance it was active on when
    the session last used it (failover to the secondary, failback to the primary): the client
    must move, to another partition of its instance or to the new active instance ``to``. The
    API answers 409 with ``code`` partition_moved and ``partition``, ``from`` and ``to``."""

    code = "partition_moved"

    def __init__(self, *, partition: str, from_instance: str | None, to_instance: str | None):
        where = f"instance {to_instance}" if to_instance else "no instance (none is up)"
        super().__init__(
            f"Partition {partition} moved from instance {from_instance} to {where}: its "
            f"instance failed over or back. Move this client: pick another partition of your "
            f"instance (leave partition out), or use instance {to_instance or '(none up)'}."
        )
        self.partition = partition
        self.from_instance = from_instance
        self.to_instance = to_instance

    def as_dict(self) -> dict[str, Any]:
        return {
            "detail": self.message,
            "code": self.code,
            "partition": self.partition,
            "from": self.from_instance,
            "to": self.to_instance,
        }


def _session_get(
    lq: LogicalQueue, session: uuid.UUID | str | None, user: User
) -> LogicalQueueSession | None:
    """The caller's session (unsaved when its id is new, or forgotten after its lease)."""
    if session is None:
        return None
    try:
        sid = session if isinstance(session, uuid.UUID) else uuid.UUID(str(session))
    except ValueError as exc:
        raise DomainError(
            "A session is the id a previous answer gave (a UUID), or left out.", field="session"
        ) from exc
    found = (
        LogicalQueueSession.objects.select_related(
            "logical_queue", "partition__queue", "partition_instance"
        )
        .filter(pk=sid)
        .first()
    )
    if found is None:
        return LogicalQueueSession(id=sid, logical_queue=lq)
    if found.logical_queue_id != lq.pk:
        raise DomainError(
            f"Session {sid} is a session of logical queue {found.logical_queue.name}.",
            field="session",
        )
    uid = getattr(user, "pk", None)
    if found.user_id is not None and uid != found.user_id:
        raise DomainError(f"Session {sid} belongs to another user.", field="session")
    return found


def _active_now(part: LogicalQueuePartition) -> Instance | None:
    """The partition's active instance now. An owner whose lease ran out is failed over at once
    (queues.services' ownership refresh, which the queue monitor would run on its next pass),
    so the notice names the instance that serves the partition now."""
    table = QueueTable.objects.select_related("owner_instance").annotate(
        owner_up=up_expression("owner_instance__")
    )
    qt = table.get(pk=part.queue.queue_table_id)
    if qt.owner_instance is None or qt.owner_up != InstanceStatus.UP:
        qs.queue_table_owners_refresh()
        qt = table.get(pk=qt.pk)
    return qt.owner_instance


def _moved(part: LogicalQueuePartition, was: Instance | None) -> PartitionMoved | None:
    now = _active_now(part)
    if (now.pk if now else None) == (was.pk if was else None):
        return None
    return PartitionMoved(
        partition=part.queue.name,
        from_instance=was.name if was else None,
        to_instance=now.name if now else None,
    )


def _session_forget(sess: LogicalQueueSession | None) -> None:
    """After a notice the session keeps no partition, so its next call picks anew (the notice
    is given once). Written before the notice is raised: outside a caller's transaction it
    stays; inside one that the notice rolls back, the next call is told again."""
    if sess is not None and not sess._state.adding:
        LogicalQueueSession.objects.filter(pk=sess.pk).update(
            partition=None, partition_instance=None, last_seen=timezone.now()
        )


def _session_check(
    sess: LogicalQueueSession | None, partition: str | None, key: str | None
) -> None:
    """The failover notice: the session's kept partition moved since the session last used it."""
    if sess is None or sess._state.adding or sess.partition is None or key is not None:
        return
    kept = sess.partition
    if partition is not None and partition.lower() not in (
        kept.queue.name.lower(),
        str(kept.position),
    ):
        return  # the caller names another partition: that one is kept from now on
    moved = _moved(kept, sess.partition_instance)
    if moved is not None:
        _session_forget(sess)
        raise moved


def _session_touch(
    sess: LogicalQueueSession | None,
    *,
    user: User,
    instance: str | None,
    kept: LogicalQueuePartition | None,
) -> uuid.UUID | None:
    """Register the session's call: its mode, instance, kept partition (None: a keyed call,
    which keeps the partition it had) and last call. One upsert, skipped while nothing changed
    and the last one is recent (a quarter of the lease), so busy sessions cost few writes."""
    if sess is None:
        return None
    now = timezone.now()
    lease = float(settings.AQ_PARALLEL_SESSION_LEASE_S)
    mode = SessionMode.SERVER if instance is None else SessionMode.FIXED
    here = (instance or settings.AQ_INSTANCE_NAME).strip()[:64]
    new = sess._state.adding
    before = (sess.mode, sess.instance, sess.partition_id, sess.partition_instance_id)
    sess.mode, sess.instance = mode, here
    if kept is not None:
        sess.partition = kept
        sess.partition_instance = kept.queue.queue_table.owner_instance
    after = (sess.mode, sess.instance, sess.partition_id, sess.partition_instance_id)
    if not new and before == after and sess.last_seen > now - timedelta(seconds=lease / 4):
        return sess.pk
    if new:
        # Sessions that made no call for a lease are forgotten (they no longer count anyway).
        LogicalQueueSession.objects.filter(last_seen__lt=now - timedelta(seconds=lease)).delete()
        sess.user = user if getattr(user, "is_authenticated", False) else None  # type: ignore[assignment]
        sess.created = now
    sess.last_seen = now
    # An upsert: two first calls of one new session may arrive together.
    LogicalQueueSession.objects.bulk_create(
        [sess],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["mode", "instance", "partition", "partition_instance", "last_seen"],
    )
    sess._state.adding = False
    return sess.pk


def logical_enqueue(
    *,
    user: User,
    logical_queue: LogicalQueue | int | str,
    messages: Sequence[queue_engine.NewMessage],
    instance: str | None = None,
    key: str | None = None,
    partition: str | None = None,
    visibility: str | None = None,
    delivery_mode: str = DeliveryMode.PERSISTENT,
    session: uuid.UUID | str | None = None,
) -> Placed:
    """Enqueue ``messages`` (one transaction) on one partition of the logical queue, chosen by
    :func:`partition_for`. Persistent only. ``session``: the client session the call counts for
    (registered or refreshed here); its kept partition is used, and when that partition moved
    to another instance since, the call is refused with :class:`PartitionMoved`."""
    if delivery_mode != DeliveryMode.PERSISTENT:
        raise DomainError(BUFFERED_REFUSAL, field="delivery_mode")
    lq = logical_queue_resolve(logical_queue)
    sess = _session_get(lq, session, user)
    _session_check(sess, partition, key)
    keep = partition or (sess.partition.queue.name if sess and sess.partition else None)
    part = partition_for(logical_queue=lq, instance=instance, key=key, keep=keep)
    ids = qs.message_enqueue(user=user, queue=part.queue, messages=messages, visibility=visibility)
    sid = _session_touch(sess, user=user, instance=instance, kept=None if key else part)
    return Placed(part, ids, [], sid)


def logical_dequeue(
    *,
    user: User,
    logical_queue: LogicalQueue | int | str,
    request: qs.DequeueRequest,
    instance: str | None = None,
    key: str | None = None,
    partition: str | None = None,
    ordered: bool = False,
    session: uuid.UUID | str | None = None,
) -> Placed:
    """Dequeue from the session's partition, then from the other partitions active on the same
    instance (random order) while it is empty; with ``key``, from that group's partition only.

    ``ordered``: one consumer at a time per partition (a transaction-level advisory lock held
    until the dequeue commits, with the caller's transaction if there is one), so a group's
    messages are consumed in enqueue order even with several consumers; a busy partition is
    skipped. Selectors (correlation, msgid, condition) and buffered messages are refused.

    ``session`` as for :func:`logical_enqueue`. A blocking dequeue (``wait``) looks every
    AQ_PARALLEL_FAILOVER_CHECK_S whether its partition moved to another instance, and then ends
    at once with :class:`PartitionMoved` instead of waiting out its timeout."""
    for field in ("correlation", "msgid", "condition"):
        if getattr(request, field) not in (None, ""):
            raise DomainError(SELECTOR_REFUSAL, field=field)
    if request.delivery_mode != DeliveryMode.PERSISTENT:
        raise DomainError(BUFFERED_REFUSAL, field="delivery_mode")
    if request.cursor:
        raise DomainError(
            "A logical queue's dequeue starts at the head of a partition; it takes no cursor.",
            field="cursor",
        )
    lq = logical_queue_resolve(logical_queue)
    sess = _session_get(lq, session, user)
    _session_check(sess, partition, key)
    keep = partition or (sess.partition.queue.name if sess and sess.partition else None)
    home = partition_for(logical_queue=lq, instance=instance, key=key, keep=keep)
    order = [home]
    if key is None:
        here = home.queue.queue_table.owner_instance.name  # type: ignore[union-attr]
        others = [p for p in _active_on(_partitions(lq), here) if p.pk != home.pk]
        random.shuffle(others)
        order += others
    quick = replace(request, wait=0.0)
    found, got = home, []
    # One quick look at each, the session's partition first; then wait on it alone, if asked.
    for part in order:
        got = _dequeue_one(user, part, quick, ordered=ordered)
        if got:
            found = part
            break
    if not got and request.wait > 0:
        got = _dequeue_waiting(user, home, request, ordered=ordered, sess=sess)
    sid = _session_touch(sess, user=user, instance=instance, kept=None if key else found)
    return Placed(found, [m.id for m in got], got, sid)


def _dequeue_waiting(
    user: User,
    part: LogicalQueuePartition,
    request: qs.DequeueRequest,
    *,
    ordered: bool,
    sess: LogicalQueueSession | None,
) -> list[queue_engine.DequeuedMessage]:
    """Wait on ``part`` in slices of AQ_PARALLEL_FAILOVER_CHECK_S, looking between two slices
    whether the partition moved to another instance: a client blocked on a partition its
    instance no longer serves is told within a slice, not at the end of its timeout."""
    was = part.queue.queue_table.owner_instance
    step = max(0.05, float(settings.AQ_PARALLEL_FAILOVER_CHECK_S))
    deadline = time.monotonic() + request.wait
    while True:
        left = deadline - time.monotonic()
        got = _dequeue_one(
            user, part, replace(request, wait=max(0.0, min(step, left))), ordered=ordered
        )
        if got or left <= step:
            return got
        moved = _moved(part, was)
        if moved is not None:
            _session_forget(sess)
            raise moved


def _dequeue_one(
    user: User, part: LogicalQueuePartition, request: qs.DequeueRequest, *, ordered: bool
) -> list[queue_engine.DequeuedMessage]:
    if not ordered:
        return qs.message_dequeue(user=user, queue=part.queue, request=request)
    with transaction.atomic():
        conn = qs.raw_connection()
        locked = conn.execute(
            "SELECT pg_try_advisory_xact_lock(%s, %s)", (engine.ORDERED_LOCK, part.queue_id)
        ).fetchone()[0]
        if not locked:
            return []
        return qs.message_dequeue(user=user, queue=part.queue, request=request)
