"""The engine builds dequeued messages without the frozen dataclass's ``__init__``
(``DequeuedMessage.from_columns``, for speed): the result must be the same message."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from queues import engine

REQUIRED = {
    "id": 7,
    "queue_id": 3,
    "state": "READY",
    "priority": 1,
    "kind": "USER",
    "type_name": "",
    "correlation": "c-1",
    "sender": "S",
    "headers": {"h": 1},
    "payload_json": '{"n": 1}',
    "enq_time": datetime(2026, 11, 28, tzinfo=UTC),
    "attempts": 0,
    "position": engine.Position(1, 2, 7),
}


def test_no_field_has_a_default_factory_a_left_out_field_would_miss():
    for f in dataclasses.fields(engine.DequeuedMessage):
        assert f.default_factory is dataclasses.MISSING, f.name


@pytest.mark.parametrize(
    "extra",
    [{}, {"delivery_mode": "BUFFERED", "in_buffer": True, "tag": "1F", "route": ["A"]}],
    ids=["defaults", "every kind of field"],
)
def test_from_columns_makes_the_message_init_makes(extra):
    built = engine.DequeuedMessage.from_columns(**REQUIRED, **extra)
    made = engine.DequeuedMessage(**REQUIRED, **extra)
    assert built == made
    assert repr(built) == repr(made)
    assert built.payload == {"n": 1}
    assert built.buffered_state == made.buffered_state
    assert dataclasses.replace(built, group_size=2) == dataclasses.replace(made, group_size=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.state = "EXPIRED"  # type: ignore[misc]
