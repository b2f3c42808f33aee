"""What a Python caller of the engine may put in a message beyond parsed JSON. The enqueue
encodes payloads with orjson where its text means what the json module's would
(core/storable.py): UUIDs and enums are written as their string and value by both encoders, so
whichever one a value takes (a payload holding null takes the json module's) it is stored the
same; and raw JSON text (orjson.Fragment) that is not one JSON value is refused with nothing
kept, on an autocommit connection too, where a batch's joined payloads could otherwise give
other messages the wrong payloads."""

from __future__ import annotations

import enum
import uuid

import orjson
import psycopg
import pytest

from queues import engine, services
from queues.models import Message

from .helpers import LIVE, make_queue, msg


class Colour(enum.Enum):
    RED = "red"


ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@LIVE
@pytest.mark.parametrize("multiple_consumers", [False, True], ids=["single", "multi"])
def test_uuids_and_enums_are_stored_as_their_text_whichever_encoder_writes_them(
    admin_user, multiple_consumers
) -> None:
    queue = make_queue(admin_user, "PY", multiple_consumers=multiple_consumers)
    if multiple_consumers:
        services.subscriber_add(user=admin_user, queue=queue, name="A")
    payloads = [{"id": ID, "c": Colour.RED}, {"id": ID, "c": Colour.RED, "none": None}]
    with psycopg.connect(services.conninfo(), autocommit=True) as auto:
        info = engine.queue_info(auto, queue.pk)
        one = [engine.enqueue(auto, info, [msg(p, headers={"trace": ID})])[0] for p in payloads]
        many = engine.enqueue(auto, info, [msg(p, headers={"trace": ID}) for p in payloads])
    want = [{"id": str(ID), "c": "red"}, {"id": str(ID), "c": "red", "none": None}]
    for ids in (one, many):
        stored = [Message.objects.get(pk=i) for i in ids]
        assert [m.payload for m in stored] == want
        assert {m.headers["trace"] for m in stored} == {str(ID)}


@LIVE
@pytest.mark.parametrize(
    "payloads",
    [
        [orjson.Fragment(b'1, {"b": 2}'), {"c": 3}],  # one message's text makes two values
        [orjson.Fragment(b"[1"), orjson.Fragment(b"2]"), {"c": 3}],  # two texts make one value
    ],
    ids=["more values", "fewer values"],
)
@pytest.mark.parametrize("records", [False, True], ids=["payloads only", "with records"])
def test_raw_json_that_is_not_one_value_is_refused_and_nothing_is_kept(
    admin_user, payloads, records
) -> None:
    queue = make_queue(admin_user, "RAW")
    extra = {"priority": 5} if records else {}  # a property: the batch sends records too
    with psycopg.connect(services.conninfo(), autocommit=True) as auto:
        info = engine.queue_info(auto, queue.pk)
        with pytest.raises(engine.InvalidMessage) as err:
            engine.enqueue(auto, info, [msg(p, **extra) for p in payloads])
        assert err.value.field == "messages"
        if not records:  # with records, ROWS FROM's NULLs may meet a NOT NULL column first
            assert "raw JSON text that is not one value" in str(err.value)
        with pytest.raises(engine.InvalidMessage) as err:
            engine.enqueue(auto, info, [msg(orjson.Fragment(b"1, 2"))])
        assert err.value.field == "payload"
        # Raw JSON that is one value is what its caller asked for.
        [mid] = engine.enqueue(auto, info, [msg(orjson.Fragment(b'{"raw": [1, 2]}'))])
    assert [m.payload for m in Message.objects.all()] == [{"raw": [1, 2]}]
    assert Message.objects.get().pk == mid


@pytest.mark.parametrize("priority", [2.5, None, True, "1"])
def test_a_priority_that_is_not_an_integer_is_refused_naming_it(admin_user, priority) -> None:
    queue = make_queue(admin_user, "PRI")
    for messages, field in (
        ([msg({"n": 1}, priority=priority)], "priority"),
        ([msg({"n": 1}), msg({"n": 2}, priority=priority)], "messages[1].priority"),
    ):
        with pytest.raises(engine.InvalidMessage) as err:
            services.message_enqueue(user=admin_user, queue=queue, messages=messages)
        assert err.value.field == field
    assert not Message.objects.exists()
