"""Each check of a message's properties names the property, alone (``priority``) and at its place
in a batch (``messages[1].priority``), and refuses the whole call: validation skips the checks a
plain message does not need, and these are the messages that need them."""

from __future__ import annotations

from typing import Any

import pytest

from core.storable import MAX_SECONDS
from queues import engine, services
from queues.models import Message

from .helpers import msg

# (the place the error names, NewMessage fields that make it bad)
BAD: list[tuple[str, dict[str, Any]]] = [
    ("kind", {"kind": "NOT_A_KIND"}),
    ("kind", {"kind": ["USER"]}),  # unhashable: refused, not a TypeError
    ("expiration", {"expiration": -1}),
    ("expiration", {"expiration": MAX_SECONDS + 1}),
    ("expiration", {"expiration": float("nan")}),
    ("delay", {"delay": -1}),
    ("delay", {"delay": float("inf")}),
    ("headers.h", {"headers": {"h": "nul\x00"}}),  # the place inside the headers
    ("correlation", {"correlation": "c\x00"}),
    ("correlation", {"correlation": "c" * 129}),
    ("sender", {"sender": "s\x00"}),
    ("type_name", {"type_name": "t\x00"}),
    ("recipients[1]", {"recipients": ["R", "r\x00"]}),  # the place inside the list
    ("tag", {"tag": "XYZ"}),
    ("priority", {"priority": True}),
    ("priority", {"priority": 1.5}),
    ("priority", {"priority": 2**31}),
]


@pytest.mark.parametrize(("field", "fields"), BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_a_bad_property_is_named_alone_and_at_its_place_in_a_batch(
    admin_user, queue, field: str, fields: dict[str, Any]
) -> None:
    with pytest.raises(engine.InvalidMessage) as alone:
        services.message_enqueue(user=admin_user, queue=queue, messages=[msg({"a": 1}, **fields)])
    assert alone.value.field == field
    batch = [msg({"a": 0}), msg({"a": 1}, **fields), msg({"a": 2})]
    with pytest.raises(engine.InvalidMessage) as in_batch:
        services.message_enqueue(user=admin_user, queue=queue, messages=batch)
    assert in_batch.value.field == f"messages[1].{field}"
    assert not Message.objects.filter(queue=queue).exists()


def test_a_message_with_every_property_set_and_good_is_stored(admin_user, queue) -> None:
    good = msg(
        {"a": 1},
        priority=3,
        delay=0,
        expiration=60,
        correlation="c" * 128,
        sender="s",
        headers={"h": 1},
        type_name="T",
        tag="1F02",
    )
    ids = services.message_enqueue(user=admin_user, queue=queue, messages=[good, msg({"b": 2})])
    stored = Message.objects.get(pk=ids[0])
    assert (stored.priority, stored.correlation, stored.sender, stored.type_name) == (
        3,
        "c" * 128,
        "s",
        "T",
    )
    assert stored.headers == {"h": 1}
    assert stored.expiration == 60
