"""An enqueue sends only the properties that differ from their defaults (the rest are constants
in its statement; a batch sends those that some message of it sets): each property, given alone
or with all the others, and left at its default, is stored as given, on each ordering of the
queue table and in each delivery mode, for one message and for the messages of a batch."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

import pytest

from queues import engine, services
from queues.models import BufferStat, Message

from .helpers import LIVE, make_queue, msg

# Each property with a value other than its default.
GIVEN: dict[str, Any] = {
    "priority": 7,
    "delay": 30.0,
    "expiration": 60.0,
    "correlation": "corr-1",
    "sender": "APP1",
    "headers": {"h": 1},
    "kind": engine.ROW_LCR,
    "type_name": "T1",
}
LCR = {
    "source_database_name": "DB",
    "command_type": "INSERT",
    "object_owner": "HR",
    "object_name": "EMP",
}
# What a message that leaves them out carries: NewMessage's own defaults.
DEFAULTS = {
    f.name: f.default_factory() if f.default is MISSING else f.default  # type: ignore[misc]
    for f in fields(engine.NewMessage)
    if f.name in GIVEN
}


def _stored(m: Message) -> dict[str, Any]:
    return {
        "priority": m.priority,
        "delay": 30.0 if m.delay_until else 0.0,
        "expiration": m.expiration,
        "correlation": m.correlation,
        "sender": m.sender,
        "headers": m.headers,
        "kind": m.kind,
        "type_name": m.type_name,
    }


@pytest.mark.parametrize("sort_order", ["enq_time", "priority", "priority,commit_time"])
@pytest.mark.parametrize("given", [*GIVEN, "all", "none"])
def test_each_property_is_stored_given_or_by_default(admin_user, sort_order, given) -> None:
    queue = make_queue(admin_user, "ONE", sort_order=sort_order)
    props = GIVEN if given == "all" else {} if given == "none" else {given: GIVEN[given]}
    payload = LCR if props.get("kind") == engine.ROW_LCR else {"n": 1}
    [mid] = services.message_enqueue(user=admin_user, queue=queue, messages=[msg(payload, **props)])
    stored = Message.objects.get(pk=mid)
    assert _stored(stored) == {**DEFAULTS, **props}
    assert stored.payload == payload
    assert stored.enq_user == admin_user.username
    assert stored.state == ("WAITING" if props.get("delay") else "READY")
    by_priority = sort_order.startswith("priority")
    assert stored.sort_pri == (stored.priority if by_priority else 0)
    # Commit-time ordering: NULL until the commit's trigger gives it the commit's number.
    assert stored.commit_seq == (None if sort_order.endswith("commit_time") else 0)
    if props.get("expiration") is not None:
        assert stored.expire_at is not None


def _check(stored: Message, props: dict[str, Any], payload: Any, sort_order: str) -> None:
    assert _stored(stored) == {**DEFAULTS, **props}
    assert stored.payload == payload
    assert stored.state == ("WAITING" if props.get("delay") else "READY")
    assert stored.sort_pri == (stored.priority if sort_order.startswith("priority") else 0)
    assert stored.commit_seq == (None if sort_order.endswith("commit_time") else 0)
    assert (stored.expire_at is not None) == (props.get("expiration") is not None)


@pytest.mark.parametrize("sort_order", ["enq_time", "priority", "priority,commit_time"])
@pytest.mark.parametrize("given", [*GIVEN, "tag", "all", "none"])
def test_each_property_of_a_batch_message_is_stored_and_its_neighbours_keep_the_defaults(
    admin_user, sort_order, given
) -> None:
    queue = make_queue(admin_user, "MANY", sort_order=sort_order)
    props = GIVEN if given == "all" else {} if given == "none" else {given: GIVEN.get(given)}
    tag = props.pop("tag", None) and "ab01"
    payload = LCR if props.get("kind") == engine.ROW_LCR else {"n": 2}
    ids = services.message_enqueue(
        user=admin_user,
        queue=queue,
        messages=[msg({"n": 1}), msg(payload, tag=tag, **props), msg({"n": 3})],
    )
    first, middle, last = (Message.objects.get(pk=mid) for mid in ids)
    _check(first, {}, {"n": 1}, sort_order)
    _check(middle, props, payload, sort_order)
    _check(last, {}, {"n": 3}, sort_order)
    assert [bytes(m.tag).hex() if m.tag else None for m in (first, middle, last)] == [
        None,
        tag,
        None,
    ]
    assert {m.enq_user for m in (first, middle, last)} == {admin_user.username}


@LIVE
@pytest.mark.parametrize("delivery_mode", [engine.PERSISTENT, engine.BUFFERED])
def test_a_multi_consumer_batch_stores_its_properties_and_reaches_its_recipients(
    admin_user, delivery_mode
) -> None:
    queue = make_queue(admin_user, "MC", multiple_consumers=True)
    for name in ("A", "B"):
        services.subscriber_add(user=admin_user, queue=queue, name=name)
    props = {k: v for k, v in GIVEN.items() if k not in ("delay", "kind")}
    ids = services.message_enqueue(
        user=admin_user,
        queue=queue,
        messages=[msg({"n": 1}, recipients=["B"]), msg({"n": 2}, **props), msg({"n": 3})],
        delivery_mode=delivery_mode,
    )
    got = {
        name: services.message_dequeue(
            user=admin_user,
            queue=queue,
            request=services.DequeueRequest(
                batch=10, consumer_name=name, delivery_mode=delivery_mode
            ),
        )
        for name in ("A", "B")
    }
    assert [m.id for m in got["A"]] == ids[1:]
    assert [m.id for m in got["B"]] == ids
    second = next(m for m in got["B"] if m.id == ids[1])
    assert (second.priority, second.correlation, second.sender, second.headers) == (
        7,
        "corr-1",
        "APP1",
        {"h": 1},
    )


@LIVE
def test_a_buffered_enqueue_counts_its_sender(admin_user) -> None:
    queue = make_queue(admin_user, "BUF")
    for sender in ("", "APP2", "APP2"):
        services.message_enqueue(
            user=admin_user,
            queue=queue,
            messages=[msg({"n": 1}, sender=sender)],
            delivery_mode=engine.BUFFERED,
        )
    got = services.message_dequeue(
        user=admin_user,
        queue=queue,
        request=services.DequeueRequest(batch=10, delivery_mode=engine.BUFFERED),
    )
    assert sorted(m.sender for m in got) == ["", "APP2", "APP2"]
    counts: dict[str, int] = {}
    for row in BufferStat.objects.filter(queue=queue):
        counts[row.sender] = counts.get(row.sender, 0) + row.enqueued
    assert counts == {"": 1, "APP2": 2}
