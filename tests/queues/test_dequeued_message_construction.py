"""The engine builds dequeued messages without the frozen dataclass's ``__init__``
(``DequeuedMessage.from_columns``, for speed): the result must be the same message."""

from __future__ import annotations

import dataclasses
import uuid
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


def _columns(text: str) -> list[str]:
    """The field each expression of a column list stands for (commas inside calls kept)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    names = {"m.payload::text": "payload_json", "upper(encode(m.tag, 'hex'))": "tag"}
    return [names.get(p, p.removeprefix("m.").removesuffix("::text")) for p in parts]


def test_a_row_of_the_selected_columns_makes_the_message_init_makes():
    """_row_to_message names each column of _COLUMNS by its place: a row in _COLUMNS' order
    (with a statement's counter flag after it) gives every field its own column's value. Every
    value differs from the others in value and type, so a swap of any two shows."""
    from queues.engine.rows import _COLUMNS, _row_to_message

    values = {
        "id": 7,
        "queue_id": 3,
        "state": "READY",
        "priority": 4,
        "kind": "USER",
        "type_name": "T",
        "correlation": "c-1",
        "sender": "S",
        "headers": {"h": 1},
        "payload_json": '{"n": 1}',
        "enq_time": datetime(2026, 11, 28, tzinfo=UTC),
        "attempts": 5,
        "sort_pri": 11,
        "commit_seq": 12,
        "lock_token": uuid.UUID(int=13),
        "original_queue_id": 9,
        "exception_reason": "MAX_RETRIES",
        "delivery_mode": "BUFFERED",
        "in_buffer": True,
        "tag": "1F",
        "origin_site": "SITE_B",
        "route": ["SITE_B"],
    }
    columns = _columns(_COLUMNS)
    assert sorted(columns) == sorted(values)
    row = (*('{"h": 1}' if c == "headers" else values[c] for c in columns), True)
    fields = {k: v for k, v in values.items() if k not in ("sort_pri", "commit_seq")}
    made = engine.DequeuedMessage(**fields, position=engine.Position(11, 12, 7))
    built = _row_to_message(row)
    assert built == made
    for name in fields:  # == of 4 and True, say, would not tell a swap
        assert type(getattr(built, name)) is type(getattr(made, name)), name
    # No headers come as "{}" and are read without a parse.
    at = columns.index("headers")
    assert _row_to_message((*row[:at], "{}", *row[at + 1 :])).headers == {}
