"""Writes of the parallel app: logical queues (create, comment, rebuild, drop), the partitions'
purpose, and enqueue/dequeue on a logical queue. The physical queues and queue tables are made,
altered and dropped only through queues.services, inside the same transaction, so a refused step
leaves nothing behind.

``user=None`` means an internal caller (a benchmark, a Celery task)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import transaction

from core.choices import Capability, ChangeAction
from core.exceptions import DomainError, Forbidden
from core.roles import user_can
from core.services import change_log_deletion, change_log_record, object_snapshot
from core.validators import name_validator
from instances.models import Instance
from instances.selectors import live_instance_ids
from instances.services import instance_resolve
from parallel import engine
from parallel.models import LogicalQueue, LogicalQueuePartition
from queues import engine as queue_engine
from queues import services as qs
from queues.choices import DeliveryMode, SortOrder
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
    if not isinstance(purpose, str):
        raise DomainError("The purpose is text.", field="purpose")
    if len(purpose) > 200:
        raise DomainError("A purpose has at most 200 characters.", field="purpose")
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
        qt = part.queue.queue_table
        want = (primary.pk if primary else None, secondary.pk if secondary else None)
        if (qt.primary_instance_id, qt.secondary_instance_id) == want:
            continue
        # Clear first: swapping two instances would otherwise pass through primary == secondary.
        qs.queue_table_update(
            user=user, queue_table=qt, primary_instance=primary, secondary_instance=None
        )
        qs.queue_table_update(user=user, queue_table=qt, secondary_instance=secondary)
        changed.append(part.queue.name)
    change_log_record(
        user=user,
        action=ChangeAction.ACTION,
        verb="logical_queue_rebuild",
        obj=lq,
        after={"instances": [i.name for i in insts], "changed": changed},
    )
    return RebuildResult([i.name for i in insts], changed)


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
    """Where an operation went: the partition (its queue name and position) and what it did."""

    partition: LogicalQueuePartition
    ids: list[int]
    messages: list[queue_engine.DequeuedMessage]


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
) -> Placed:
    """Enqueue ``messages`` (one transaction) on one partition of the logical queue, chosen by
    :func:`partition_for`. Persistent only."""
    if delivery_mode != DeliveryMode.PERSISTENT:
        raise DomainError(BUFFERED_REFUSAL, field="delivery_mode")
    lq = logical_queue_resolve(logical_queue)
    part = partition_for(logical_queue=lq, instance=instance, key=key, keep=partition)
    ids = qs.message_enqueue(user=user, queue=part.queue, messages=messages, visibility=visibility)
    return Placed(part, ids, [])


def logical_dequeue(
    *,
    user: User,
    logical_queue: LogicalQueue | int | str,
    request: qs.DequeueRequest,
    instance: str | None = None,
    key: str | None = None,
    partition: str | None = None,
    ordered: bool = False,
) -> Placed:
    """Dequeue from the session's partition, then from the other partitions active on the same
    instance (random order) while it is empty; with ``key``, from that group's partition only.

    ``ordered``: one consumer at a time per partition (a transaction-level advisory lock held
    until the dequeue commits, with the caller's transaction if there is one), so a group's
    messages are consumed in enqueue order even with several consumers; a busy partition is
    skipped. Selectors (correlation, msgid, condition) and buffered messages are refused."""
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
    home = partition_for(logical_queue=lq, instance=instance, key=key, keep=partition)
    order = [home]
    if key is None:
        here = home.queue.queue_table.owner_instance.name  # type: ignore[union-attr]
        others = [p for p in _active_on(_partitions(lq), here) if p.pk != home.pk]
        random.shuffle(others)
        order += others
    quick = qs.DequeueRequest(**{**request.__dict__, "wait": 0.0})
    for i, part in enumerate(order):
        # Wait (if asked) on the session's partition alone, after one quick look at all.
        req = request if i == 0 and len(order) == 1 else quick
        got = _dequeue_one(user, part, req, ordered=ordered)
        if got:
            return Placed(part, [m.id for m in got], got)
    if request.wait > 0 and len(order) > 1:
        got = _dequeue_one(user, home, request, ordered=ordered)
        return Placed(home, [m.id for m in got], got)
    return Placed(home, [], [])


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
