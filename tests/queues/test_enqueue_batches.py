"""Enqueue one or many messages in one transaction: all of a batch lands, or none of it."""

from __future__ import annotations

import importlib

import pytest

from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Message

from .helpers import make_queue, msg, put, take

ORDER_SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["qty"],
                "properties": {"qty": {"type": "integer", "minimum": 1}},
            },
        }
    },
}


@pytest.fixture
def typed_queue(admin_user):
    return make_queue(admin_user, "TYPED", payload_type="ORDER_T", payload_schema=ORDER_SCHEMA)


def test_enqueue_of_one_message_returns_its_id_and_stores_it_ready(admin_user, queue):
    [mid] = put(queue, {"n": 1}, user=admin_user, correlation="c-1", priority=3)
    stored = Message.objects.get(pk=mid)
    assert stored.queue_id == queue.pk
    assert stored.state == "READY"
    assert stored.payload == {"n": 1}
    assert stored.correlation == "c-1"
    assert stored.priority == 3
    assert stored.attempts == 0
    assert stored.enq_user == admin_user.username


def test_enqueue_of_many_messages_stores_them_all_in_order(admin_user, queue):
    ids = put(queue, *[{"n": i} for i in range(50)], user=admin_user)
    assert len(ids) == 50
    assert ids == sorted(ids)
    got = take(queue, user=admin_user, mode=engine.BROWSE, batch=100)
    assert [m.payload["n"] for m in got] == list(range(50))


def test_a_bad_message_at_position_3_rejects_the_whole_batch_naming_it(admin_user, typed_queue):
    good = {"items": [{"qty": 1}]}
    batch = [msg(good), msg(good), msg(good), msg({"items": [{"qty": 0}]}), msg(good)]
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(user=admin_user, queue=typed_queue, messages=batch)
    assert err.value.field == "messages[3].payload.items[0].qty"
    assert not Message.objects.exists()


def test_a_bad_option_in_a_batch_names_the_message_and_the_option(admin_user, queue):
    batch = [msg(1), msg(2), msg(3), msg(4, delay=-1)]
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(user=admin_user, queue=queue, messages=batch)
    assert err.value.field == "messages[3].delay"
    assert not Message.objects.exists()


def test_a_batch_that_fails_inside_the_database_leaves_nothing_behind(admin_user, queue):
    # Payloads are checked by the engine before the INSERT; a priority out of int4 range is caught
    # too. Here the second message names a recipient on a single-consumer queue.
    batch = [msg(1), msg(2, recipients=["NOBODY"])]
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(user=admin_user, queue=queue, messages=batch)
    assert err.value.field == "recipients"
    assert not Message.objects.exists()


def test_an_empty_batch_enqueues_nothing(admin_user, queue):
    assert services.message_enqueue(user=admin_user, queue=queue, messages=[]) == []
    assert not Message.objects.exists()


def test_enqueue_writes_no_change_log_entry_because_messages_are_data_not_topology(
    admin_user, queue
):
    before = ChangeLogEntry.objects.count()
    put(queue, 1, 2, 3, user=admin_user)
    assert ChangeLogEntry.objects.count() == before


def test_row_and_ddl_change_records_are_checked_against_their_shapes(admin_user, queue):
    row_lcr = {
        "source_database_name": "DB1",
        "command_type": "INSERT",
        "object_owner": "HR",
        "object_name": "EMPLOYEES",
        "new_values": {"ID": 1},
    }
    [mid] = services.message_enqueue(
        user=admin_user, queue=queue, messages=[msg(row_lcr, kind=engine.ROW_LCR)]
    )
    assert Message.objects.get(pk=mid).kind == engine.ROW_LCR
    bad = dict(row_lcr, command_type="MERGE")
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(
            user=admin_user, queue=queue, messages=[msg(bad, kind=engine.ROW_LCR)]
        )
    assert err.value.field == "payload.command_type"
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(
            user=admin_user, queue=queue, messages=[msg({"ddl_text": "x"}, kind=engine.DDL_LCR)]
        )
    assert err.value.field == "payload"
    assert Message.objects.count() == 1


# Payloads validation judges from their JSON text (sent as that text) beside payloads it walks
# (astral-plane characters and brackets inside strings: encoded again), null, scalars and numbers
# beyond 64 bits, in one batch and one at a time: each is stored and dequeued exactly, in order.
MIXED_PAYLOADS = [
    {"n": 123456789012345678901234567890, "t": "héllo"},
    {"emoji": "😀", "nested": [1, {"b": None}]},
    "text with [brackets] and {braces}",
    None,
    3.5,
    -0,
    [],
    {},
    True,
    {"deep": [[[["x"]]]], "quote": 'a "q" \\ b'},
]


@pytest.mark.parametrize(
    "batched",
    ["jsonb", "json", False],
    ids=["one batch", "one batch read as json", "one at a time"],
)
def test_every_payload_shape_is_stored_and_dequeued_exactly_in_order(
    admin_user, queue, batched, monkeypatch
):
    if batched == "json":
        # A batch whose payloads' text passes JSONB_BATCH_MAX (a jsonb value holds 256 MB at
        # most) is read as json, each payload cast on its own.
        monkeypatch.setattr(importlib.import_module("queues.engine.enqueue"), "JSONB_BATCH_MAX", 10)
    if batched:
        ids = put(queue, *MIXED_PAYLOADS, user=admin_user)
    else:
        ids = [put(queue, p, user=admin_user)[0] for p in MIXED_PAYLOADS]
    assert [Message.objects.get(pk=i).payload for i in ids] == MIXED_PAYLOADS
    got = take(queue, user=admin_user, mode=engine.REMOVE, batch=100)
    assert [m.id for m in got] == ids
    # The dequeued message holds the stored JSON text and parses it on first use.
    assert [m.payload for m in got] == MIXED_PAYLOADS
    assert [type(m.payload) for m in got] == [type(p) for p in MIXED_PAYLOADS]
    assert got[0].payload_json.startswith("{")
