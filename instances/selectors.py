"""Reads of the instances app: one queryset per list, shared by the pages and the API."""

from __future__ import annotations

from django.db.models import Case, CharField, QuerySet, Value, When
from django.db.models.functions import Now

from instances.choices import InstanceStatus
from instances.models import Instance


def up_expression(prefix: str = "") -> Case:
    """UP while the instance's lease (its workers' last heartbeat plus the limit) runs; the same
    test as the GV$INSTANCE view, for querysets of this or a related model (``prefix``)."""
    return Case(
        When(**{f"{prefix}alive_until__gt": Now()}, then=Value(InstanceStatus.UP)),
        default=Value(InstanceStatus.DOWN),
        output_field=CharField(),
    )


def instance_list() -> QuerySet[Instance]:
    return Instance.objects.annotate(status=up_expression())


def live_instance_ids() -> list[int]:
    return list(
        Instance.objects.filter(alive_until__gt=Now())
        .order_by("inst_id")
        .values_list("inst_id", flat=True)
    )


INSTANCE_QUEUE_PREFIX = "aq.inst."


def instance_queue(name: str, queue: str) -> str:
    """Instance ``name``'s copy of the Celery queue ``queue``: the workers of that instance that
    consume ``queue`` consume it too, and work of that kind bound to a queue table the instance
    owns is sent there (a propagation run reaches a propagation worker, never the worker that
    runs beat's short tasks). Lower case, as instance names compare case-insensitively."""
    return f"{INSTANCE_QUEUE_PREFIX}{name.strip().lower()}.{queue}"
