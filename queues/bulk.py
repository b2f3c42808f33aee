"""The queue list's bulk actions (page and ``POST /api/queues/bulk/``): one line per verb, each
calling the single-object service the queue's own page calls."""

from __future__ import annotations

from core.bulk import BulkAction, BulkActions
from core.choices import Capability
from queues import engine, selectors, services
from queues.filtersets import QueueFilterSet
from queues.models import Queue


def _toggle(verb: str, what: str) -> BulkAction:
    """START_QUEUE / STOP_QUEUE for enqueue, dequeue or both, as the queue page's buttons."""
    service = services.queue_start if verb == "start" else services.queue_stop
    flags = {"enqueue": what in ("enqueue", "both"), "dequeue": what in ("dequeue", "both")}
    said = "enqueue and dequeue" if what == "both" else what
    past = "started" if verb == "start" else "stopped"
    return BulkAction(
        label=f"{verb.capitalize()}" + ("" if what == "both" else f" {what}"),
        capability=Capability.OPERATE,
        run=lambda user, q: service(user=user, queue=q, **flags),
        describe=f"{'START' if verb == 'start' else 'STOP'}_QUEUE: {verb} {said}.",
        done=f"{said.capitalize()} {past}.",
    )


QUEUE_BULK = BulkActions(
    noun="queue",
    plural="queues",
    objects=lambda: Queue.objects.select_related("queue_table"),
    actions={
        "start": _toggle("start", "both"),
        "stop": _toggle("stop", "both"),
        "start_enqueue": _toggle("start", "enqueue"),
        "stop_enqueue": _toggle("stop", "enqueue"),
        "start_dequeue": _toggle("start", "dequeue"),
        "stop_dequeue": _toggle("stop", "dequeue"),
        "purge": BulkAction(
            label="Purge",
            capability=Capability.OPERATE,
            # No condition: every message of the queue, as PURGE_QUEUE_TABLE without one.
            run=lambda user, q: services.queue_purge(
                user=user, queue=q, condition=engine.PurgeCondition()
            ),
            describe="Remove every message of each queue, in every state.",
            done="{result} message(s) purged.",
            destructive=True,
        ),
        "replay": BulkAction(
            label="Replay exceptions",
            capability=Capability.OPERATE,
            run=lambda user, q: services.exception_queue_replay(user=user, queue=q),
            describe="Move every message of each exception queue back to its original queue, "
            "marked replayed; refused for a queue that is not an exception queue.",
            done="{result} message(s) replayed.",
        ),
        "drop": BulkAction(
            label="Drop",
            capability=Capability.CONFIGURE,
            run=lambda user, q: services.queue_delete(user=user, queue=q),
            describe="Drop each queue; refused for one that holds messages or serves as "
            "another queue's exception queue.",
            done="Dropped.",
            destructive=True,
        ),
    },
    list_url="queues:queue_list",
    detail_url="queues:queue_detail",
    bulk_url="queues:queue_bulk",
    filterset=QueueFilterSet,
    listing=selectors.queue_list,
)
