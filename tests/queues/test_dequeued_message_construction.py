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


def test_a_row_of_the_selected_columns_makes_the_message_init_makes():
    """_row_to_message names each column of _COLUMNS by its place: a row in that order (with a
    statement's counter flag after it) gives every field its column's value."""
    from queues.engine.rows import _COLUMNS, _row_to_message

    values = {
        **REQUIRED,
        "headers": '{"h": 1}',
        "lock_token": None,
        "original_queue_id": 9,
        "exception_reason": "MAX_RETRIES",
        "delivery_mode": "BUFFERED",
        "in_buffer": True,
        "tag": "1F",
        "origin_site": "SITE_B",
        "route": ["SITE_B"],
    }
    position = values.pop("position")
    # Each column in _COLUMNS' order (tests/queues/test_an_enqueue_stores_every_property.py
    # reads every property back through a real dequeue).
    assert _COLUMNS.startswith("m.id, m.queue_id, m.state,") and _COLUMNS.endswith("m.route")
    row = (
        *(values[k] for k in ("id", "queue_id", "state", "priority", "kind", "type_name")),
        *(values[k] for k in ("correlation", "sender", "headers", "payload_json", "enq_time")),
        values["attempts"],
        position.sort_pri,
        position.commit_seq,
        *(values[k] for k in ("lock_token", "original_queue_id", "exception_reason")),
        *(values[k] for k in ("delivery_mode", "in_buffer", "tag", "origin_site", "route")),
        True,  # the counter's flag
    )
    made = engine.DequeuedMessage(**{**values, "headers": {"h": 1}, "position": position})
    built = _row_to_message(row)
    assert built == made
    # No headers come as "{}" and are read without a parse.
    assert _row_to_message((*row[:8], "{}", *row[9:])).headers == {}
