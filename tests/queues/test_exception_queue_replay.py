"""Exception-queue replay moves messages back to their original queue, marked replayed."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Message

from .helpers import LIVE, make_queue, payloads, put, row, take


class HandlerFailed(Exception):
    pass


def fail(_message) -> None:
    raise HandlerFailed


def poison(queue, user, count: int = 1, **request) -> None:
    """Make the next ``count`` messages fail their way into the exception queue."""
    for _ in range(count):
        with pytest.raises(HandlerFailed):
            services.message_process(
                user=user, queue=queue, handler=fail, request=services.DequeueRequest(**request)
            )


def exq_of(queue):
    queue.refresh_from_db()
    return queue.exception_queue


def test_replay_of_selected_messages_moves_only_those_back_marked_replayed(admin_user):
    queue = make_queue(admin_user, "REPLAY", max_retries=0)
    ids = put(queue, "a", "b", "c", user=admin_user)
    poison(queue, admin_user, 3)
    exq = exq_of(queue)
    assert services.exception_queue_replay(user=admin_user, queue=exq, ids=[ids[1]]) == 1
    back = row(ids[1])
    assert back.queue_id == queue.pk
    assert back.state == "READY"
    assert back.replayed is True
    assert back.attempts == 0
    assert back.original_queue_id is None
    assert back.exception_reason == ""
    assert row(ids[0]).queue_id == exq.pk
    assert payloads(take(queue, user=admin_user, batch=10)) == ["b"]


def test_replay_of_all_moves_every_message_back(admin_user):
    queue = make_queue(admin_user, "REPLAY", max_retries=0)
    ids = put(queue, "a", "b", "c", user=admin_user)
    poison(queue, admin_user, 3)
    exq = exq_of(queue)
    assert services.exception_queue_replay(user=admin_user, queue=exq) == 3
    assert not Message.objects.filter(queue=exq).exists()
    assert set(Message.objects.filter(pk__in=ids).values_list("queue_id", "replayed")) == {
        (queue.pk, True)
    }
    assert payloads(take(queue, user=admin_user, batch=10)) == ["a", "b", "c"]


def test_replay_writes_one_change_log_entry(admin_user):
    queue = make_queue(admin_user, "REPLAY", max_retries=0)
    put(queue, "a", user=admin_user)
    poison(queue, admin_user)
    before = ChangeLogEntry.objects.count()
    services.exception_queue_replay(user=admin_user, queue=exq_of(queue))
    assert ChangeLogEntry.objects.count() == before + 1
    entry = ChangeLogEntry.objects.first()
    assert entry.verb == "exception_queue_replay"
    assert entry.after == {"replayed": 1}


def test_replay_from_a_normal_queue_is_refused(admin_user, queue):
    with pytest.raises(engine.InvalidMessage) as err:
        services.exception_queue_replay(user=admin_user, queue=queue, ids=[1])
    assert err.value.field == "queue"


def test_a_replayed_message_that_fails_again_goes_back_to_the_exception_queue(admin_user):
    queue = make_queue(admin_user, "REPLAY", max_retries=0)
    [mid] = put(queue, "a", user=admin_user)
    poison(queue, admin_user)
    exq = exq_of(queue)
    services.exception_queue_replay(user=admin_user, queue=exq, ids=[mid])
    poison(queue, admin_user)
    assert row(mid).queue_id == exq.pk
    assert row(mid).original_queue_id == queue.pk


def test_replay_of_a_subscribers_exception_copy_returns_it_to_that_subscriber(admin_user):
    queue = make_queue(admin_user, "MCREPLAY", multiple_consumers=True, max_retries=0)
    services.subscriber_add(user=admin_user, queue=queue, name="A")
    services.subscriber_add(user=admin_user, queue=queue, name="B")
    [mid] = put(queue, "m", user=admin_user)
    poison(queue, admin_user, consumer_name="A")
    take(queue, user=admin_user, consumer_name="B")
    exq = exq_of(queue)
    [copy] = Message.objects.filter(queue=exq)
    assert services.exception_queue_replay(user=admin_user, queue=exq, ids=[copy.pk]) == 1
    assert take(queue, user=admin_user, consumer_name="B") == []
    assert payloads(take(queue, user=admin_user, consumer_name="A")) == ["m"]
    assert row(copy.pk).state == "PROCESSED"
    assert row(mid).state == "PROCESSED"


@LIVE
def test_a_replayed_message_joins_the_tail_of_a_commit_time_queue(admin_user):
    queue = make_queue(admin_user, "CTREPLAY", sort_order="commit_time", max_retries=0)
    [a] = put(queue, "a", user=admin_user)
    put(queue, "b", user=admin_user)
    poison(queue, admin_user)
    put(queue, "c", user=admin_user)
    old_seq = row(a).commit_seq
    services.exception_queue_replay(user=admin_user, queue=exq_of(queue), ids=[a])
    assert row(a).commit_seq > old_seq
    assert payloads(take(queue, user=admin_user, batch=10)) == ["b", "c", "a"]


@LIVE
def test_replay_of_all_in_chunks_moves_each_message_exactly_once(admin_user, monkeypatch):
    monkeypatch.setattr(services, "REPLAY_CHUNK", 7)
    queue = make_queue(admin_user, "BIGREPLAY", max_retries=0)
    ids = put(queue, *range(30), user=admin_user)
    exq = exq_of(queue)
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "UPDATE aq_message SET queue_id = %s, original_queue_id = %s, state = 'EXPIRED', "
            "exception_reason = 'TEST' WHERE id = ANY(%s)",
            [exq.pk, queue.pk, ids],
        )
    assert services.exception_queue_replay(user=admin_user, queue=exq) == 30
    assert sorted(m.id for m in take(queue, user=admin_user, batch=100)) == sorted(ids)
    assert ChangeLogEntry.objects.filter(verb="exception_queue_replay").count() == 1


def test_replay_of_an_expired_message_whose_subscribers_are_gone_makes_it_processed(admin_user):
    queue = make_queue(admin_user, "REPLAY_MC", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="A")
    (mid,) = put(queue, "lonely", user=admin_user, expiration=0)
    services.queue_monitor_run()
    exq = exq_of(queue)
    assert row(mid).queue_id == exq.pk
    services.subscriber_remove(user=admin_user, subscriber=queue.subscribers.get(name="A"))
    assert services.exception_queue_replay(user=admin_user, queue=exq, ids=[mid]) == 1
    back = row(mid)
    assert back.queue_id == queue.pk
    assert back.state == "PROCESSED"
    assert back.pending_consumers == 0
