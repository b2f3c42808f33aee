"""What the README says the change log holds: an operator's actions on a queue as a whole (start,
stop, purge, replay) are recorded, each once, with the operator's name; enqueue, dequeue, ack and
release of single messages are not (AQ keeps no per-message log); the message itself keeps its
enqueuing user."""

from __future__ import annotations

from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Message

from .helpers import put, take


def _verbs() -> list[str]:
    return list(ChangeLogEntry.objects.order_by("id").values_list("verb", flat=True))


def test_message_operations_write_no_change_log_row(operator_user, queue):
    before = _verbs()
    put(queue, "a", "b", "c", user=operator_user)
    take(queue, user=operator_user)
    [leased] = take(queue, user=operator_user, mode=engine.LOCKED)
    services.message_ack(
        user=operator_user, queue=queue, msgid=leased.id, lock_token=str(leased.lock_token)
    )
    [leased] = take(queue, user=operator_user, mode=engine.LOCKED)
    services.message_release(
        user=operator_user, queue=queue, msgid=leased.id, lock_token=str(leased.lock_token)
    )

    assert _verbs() == before
    assert list(Message.objects.filter(queue=queue).values_list("enq_user", flat=True)) == ["oscar"]


def test_queue_actions_are_each_recorded_once_with_the_operator(
    operator_user, queue, expired_message
):
    _source, exception_queue, _mid = expired_message
    before = len(_verbs())
    put(queue, "a", user=operator_user)
    services.queue_stop(user=operator_user, queue=queue)
    services.queue_start(user=operator_user, queue=queue)
    removed = services.queue_purge(
        user=operator_user, queue=queue, condition=engine.PurgeCondition(states=["READY"])
    )
    replayed = services.exception_queue_replay(user=operator_user, queue=exception_queue)

    entries = list(ChangeLogEntry.objects.order_by("id"))[before:]
    verbs = ["queue_stop", "queue_start", "queue_purge", "exception_queue_replay"]
    assert [e.verb for e in entries] == verbs
    assert {e.username for e in entries} == {"oscar"}
    assert (removed, entries[2].after) == (1, {"removed": 1})
    assert (replayed, entries[3].after) == (1, {"replayed": 1})
