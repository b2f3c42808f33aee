"""Dequeue order follows the queue table's sort order: enq_time, priority (lower number first),
commit_time, or priority then commit_time."""

from __future__ import annotations

from queues import engine
from queues.models import Message

from .helpers import LIVE, browse, info, make_queue, msg, payloads, put, raw, take

PRIORITIES = (("p5", 5), ("p1", 1), ("p9", 9), ("p1b", 1), ("p0", 0))


def test_enq_time_order_is_enqueue_order_whatever_the_priority(admin_user):
    queue = make_queue(admin_user, "BYTIME", sort_order="enq_time")
    for payload, pri in PRIORITIES:
        put(queue, payload, user=admin_user, priority=pri)
    assert payloads(take(queue, user=admin_user, batch=10)) == ["p5", "p1", "p9", "p1b", "p0"]


def test_priority_order_takes_the_lowest_number_first_and_ties_in_enqueue_order(admin_user):
    queue = make_queue(admin_user, "BYPRI", sort_order="priority")
    for payload, pri in PRIORITIES:
        put(queue, payload, user=admin_user, priority=pri)
    assert payloads(take(queue, user=admin_user, mode=engine.BROWSE, batch=10)) == [
        "p0",
        "p1",
        "p1b",
        "p5",
        "p9",
    ]
    got = [take(queue, user=admin_user)[0].payload for _ in range(5)]
    assert got == ["p0", "p1", "p1b", "p5", "p9"]


def test_negative_priorities_come_before_positive_ones(admin_user):
    queue = make_queue(admin_user, "BYPRI", sort_order="priority")
    put(queue, "plus", user=admin_user, priority=3)
    put(queue, "minus", user=admin_user, priority=-3)
    assert payloads(take(queue, user=admin_user, batch=2)) == ["minus", "plus"]


@LIVE
def test_commit_time_order_is_commit_order_not_enqueue_order(admin_user):
    queue = make_queue(admin_user, "BYCOMMIT", sort_order="commit_time")
    with raw() as first, raw() as second:
        engine.enqueue(first, info(first, queue), [msg("enqueued first, committed last")])
        engine.enqueue(second, info(second, queue), [msg("enqueued last, committed first")])
        second.commit()
        first.commit()
    assert payloads(take(queue, user=admin_user, batch=5)) == [
        "enqueued last, committed first",
        "enqueued first, committed last",
    ]


@LIVE
def test_the_messages_of_one_transaction_share_one_commit_sequence(admin_user):
    queue = make_queue(admin_user, "BYCOMMIT", sort_order="commit_time")
    first = put(queue, "a", "b", "c", user=admin_user)
    second = put(queue, "d", "e", user=admin_user)
    seqs = dict(Message.objects.filter(queue=queue).values_list("id", "commit_seq"))
    assert len({seqs[i] for i in first}) == 1
    assert len({seqs[i] for i in second}) == 1
    assert seqs[first[0]] < seqs[second[0]]
    assert payloads(take(queue, user=admin_user, batch=10)) == ["a", "b", "c", "d", "e"]


@LIVE
def test_priority_commit_time_orders_by_priority_then_by_commit(admin_user):
    queue = make_queue(admin_user, "BYPRICOMMIT", sort_order="priority,commit_time")
    with raw() as t1, raw() as t2:
        engine.enqueue(t1, info(t1, queue), [msg("t1-p2", priority=2), msg("t1-p1", priority=1)])
        engine.enqueue(t2, info(t2, queue), [msg("t2-p2", priority=2), msg("t2-p1", priority=1)])
        t2.commit()
        t1.commit()
        assert payloads(browse(t1, queue)) == ["t2-p1", "t1-p1", "t2-p2", "t1-p2"]
    assert payloads(take(queue, user=admin_user, batch=10)) == [
        "t2-p1",
        "t1-p1",
        "t2-p2",
        "t1-p2",
    ]
