"""Bad input through the services gets a clear error naming the field, and nothing is written:
no topology, no message, no change-log entry."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import psycopg
import pytest
from django.core.exceptions import ValidationError

from core.exceptions import Conflict, DomainError
from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Agent, Message, Queue, QueueTable, Subscriber

from .helpers import LIVE, make_queue, msg, put, take

ORDER_SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["sku", "qty"],
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            },
        }
    },
}


@pytest.fixture
def unchanged(db):
    """Asserts, at the end of the test, that no topology, message or change-log row was added
    after the point where the test calls it."""
    snapshots = []

    def take_snapshot():
        snapshots.append(counts())

    yield take_snapshot
    for snap in snapshots:
        assert counts() == snap


def counts() -> dict[str, int]:
    return {
        "queue_tables": QueueTable.objects.count(),
        "queues": Queue.objects.count(),
        "messages": Message.objects.count(),
        "subscribers": Subscriber.objects.count(),
        "agents": Agent.objects.count(),
        "log": ChangeLogEntry.objects.count(),
    }


@pytest.fixture
def typed_queue(admin_user):
    return make_queue(admin_user, "TYPED", payload_type="ORDER_T", payload_schema=ORDER_SCHEMA)


# --- messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["NO_SUCH_QUEUE", 987654321])
def test_an_unknown_queue_is_not_found_for_enqueue_and_dequeue(admin_user, unchanged, key):
    unchanged()
    with pytest.raises(engine.QueueNotFound) as err:
        put(key, "m", user=admin_user)
    assert err.value.field == "queue"
    assert err.value.status_code == 404
    with pytest.raises(engine.QueueNotFound):
        take(key, user=admin_user)


def test_a_queue_is_found_by_name_whatever_the_case(admin_user, queue):
    put("orders", "m", user=admin_user)
    assert [m.payload for m in take("Orders", user=admin_user)] == ["m"]


def test_a_payload_failing_the_schema_names_the_path_of_the_bad_value(
    admin_user, typed_queue, unchanged
):
    unchanged()
    with pytest.raises(engine.InvalidMessage) as err:
        put(typed_queue, {"items": [{"sku": "A", "qty": "two"}]}, user=admin_user)
    assert err.value.field == "payload.items[0].qty"
    assert err.value.status_code == 400
    assert "integer" in err.value.message
    with pytest.raises(engine.InvalidMessage) as err:
        put(typed_queue, {"items": [{"sku": "A", "qty": 1}, {"qty": 1}]}, user=admin_user)
    assert err.value.field == "payload.items[1]"
    assert "sku" in err.value.message


def test_a_payload_of_another_type_is_refused_naming_the_type(admin_user, typed_queue, unchanged):
    unchanged()
    with pytest.raises(engine.InvalidMessage) as err:
        put(typed_queue, {"items": []}, user=admin_user, type_name="INVOICE_T")
    assert err.value.field == "type_name"


def test_a_valid_typed_payload_is_accepted(admin_user, typed_queue):
    put(typed_queue, {"items": [{"sku": "A", "qty": 2}]}, user=admin_user, type_name="order_t")
    assert Message.objects.count() == 1


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"delay": -1}, "delay"),
        ({"expiration": -5}, "expiration"),
        ({"priority": 2**31}, "priority"),
        ({"correlation": "x" * 129}, "correlation"),
        ({"kind": "EMAIL"}, "kind"),
    ],
)
def test_bad_message_options_are_refused_naming_the_option(
    admin_user, queue, unchanged, options, field
):
    unchanged()
    with pytest.raises(engine.InvalidMessage) as err:
        services.message_enqueue(user=admin_user, queue=queue, messages=[msg("m", **options)])
    assert err.value.field == field


def test_enqueue_into_a_stopped_queue_is_refused_clearly(admin_user, queue):
    services.queue_stop(user=admin_user, queue=queue, enqueue=True, dequeue=False)
    before = counts()
    with pytest.raises(engine.QueueDisabled) as err:
        put(queue, "m", user=admin_user)
    assert err.value.field == "queue"
    assert err.value.status_code == 409
    assert "disabled" in err.value.message
    assert counts() == before
    services.queue_start(user=admin_user, queue=queue)
    put(queue, "m", user=admin_user)


def test_enqueue_into_an_exception_queue_is_refused(admin_user, queue, unchanged):
    queue.refresh_from_db()
    unchanged()
    with pytest.raises(engine.QueueDisabled):
        put(queue.exception_queue, "m", user=admin_user)


# --- topology ------------------------------------------------------------------------------------


def test_a_negative_max_retries_is_refused_naming_the_field(admin_user, queue_table, unchanged):
    unchanged()
    with pytest.raises(ValidationError) as err:
        services.queue_create(user=admin_user, name="Q1", queue_table=queue_table, max_retries=-1)
    assert "max_retries" in err.value.message_dict


@pytest.mark.parametrize("field", ["retry_delay", "retention_time"])
def test_negative_delays_are_refused_naming_the_field(admin_user, queue_table, unchanged, field):
    unchanged()
    with pytest.raises(ValidationError) as err:
        services.queue_create(user=admin_user, name="Q1", queue_table=queue_table, **{field: -1})
    assert field in err.value.message_dict


def test_an_update_to_negative_retries_is_refused_and_changes_nothing(admin_user, queue):
    before = counts()
    with pytest.raises(ValidationError) as err:
        services.queue_update(user=admin_user, queue=queue, max_retries=-3)
    assert "max_retries" in err.value.message_dict
    queue.refresh_from_db()
    assert queue.max_retries == 5
    assert counts() == before


def test_an_unknown_sort_order_is_refused_naming_the_field(admin_user, unchanged):
    unchanged()
    with pytest.raises(ValidationError) as err:
        services.queue_table_create(user=admin_user, name="QT1", sort_order="fifo")
    assert "sort_order" in err.value.message_dict


@pytest.mark.parametrize("name", ["1STARTS_WITH_DIGIT", "has space", "dash-ed", "X" * 129, ""])
def test_invalid_names_are_refused_naming_the_field(admin_user, queue_table, unchanged, name):
    unchanged()
    with pytest.raises(ValidationError) as err:
        services.queue_table_create(user=admin_user, name=name, sort_order="enq_time")
    assert "name" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        services.queue_create(user=admin_user, name=name, queue_table=queue_table)
    assert "name" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        services.agent_create(user=admin_user, name=name)
    assert "name" in err.value.message_dict


def test_an_invalid_subscriber_name_is_refused(admin_user, unchanged):
    queue = make_queue(admin_user, "PUBSUB", multiple_consumers=True)
    unchanged()
    with pytest.raises(ValidationError) as err:
        services.subscriber_add(user=admin_user, queue=queue, name="no spaces please")
    assert "name" in err.value.message_dict


def test_a_duplicate_name_in_another_case_is_a_conflict(admin_user, queue, unchanged):
    unchanged()
    with pytest.raises(Conflict) as err:
        services.queue_create(user=admin_user, name="orders", queue_table=queue.queue_table)
    assert err.value.field == "name"
    with pytest.raises(Conflict) as err:
        services.queue_table_create(user=admin_user, name="qt_orders", sort_order="enq_time")
    assert err.value.field == "name"


def test_a_typed_queue_table_needs_a_valid_schema(admin_user, unchanged):
    unchanged()
    with pytest.raises(DomainError) as err:
        services.queue_table_create(
            user=admin_user, name="QT1", sort_order="enq_time", payload_type="ORDER_T"
        )
    assert err.value.field == "payload_schema"
    with pytest.raises(DomainError) as err:
        services.queue_table_create(
            user=admin_user,
            name="QT1",
            sort_order="enq_time",
            payload_type="ORDER_T",
            payload_schema={"type": "no-such-type"},
        )
    assert err.value.field == "payload_schema"
    with pytest.raises(DomainError) as err:
        services.queue_table_create(
            user=admin_user, name="QT1", sort_order="enq_time", payload_schema={"type": "object"}
        )
    assert err.value.field == "payload_schema"


def test_a_queue_tables_sort_order_is_fixed_after_creation(admin_user, queue_table, unchanged):
    unchanged()
    with pytest.raises(DomainError) as err:
        services.queue_table_update(user=admin_user, queue_table=queue_table, sort_order="priority")
    assert err.value.field == "sort_order"


def test_an_exception_queue_from_another_queue_table_is_refused(admin_user, queue, unchanged):
    other = make_queue(admin_user, "ELSEWHERE")
    other.refresh_from_db()
    unchanged()
    with pytest.raises(DomainError) as err:
        services.queue_update(user=admin_user, queue=queue, exception_queue=other.exception_queue)
    assert err.value.field == "exception_queue"
    with pytest.raises(DomainError) as err:
        services.queue_update(user=admin_user, queue=queue, exception_queue=other)
    assert err.value.field == "exception_queue"


def test_deleting_a_queue_with_messages_is_refused_and_changes_nothing(admin_user, queue):
    put(queue, "m", user=admin_user)
    before = counts()
    with pytest.raises(Conflict) as err:
        services.queue_delete(user=admin_user, queue=queue)
    assert "purge" in err.value.message
    assert counts() == before
    services.queue_purge(user=admin_user, queue=queue, condition=engine.PurgeCondition())
    services.queue_delete(user=admin_user, queue=queue)
    assert not Queue.objects.filter(pk=queue.pk).exists()


def test_deleting_a_queue_whose_messages_wait_in_the_exception_queue_is_refused(admin_user, queue):
    [mid] = put(queue, "m", user=admin_user)
    engine.move_to_exception_queue(services.raw_connection(), [mid], "TEST")
    before = counts()
    with pytest.raises(Conflict):
        services.queue_delete(user=admin_user, queue=queue)
    assert counts() == before


def test_deleting_a_queue_table_with_messages_is_refused_and_changes_nothing(
    admin_user, queue_table, queue
):
    put(queue, "m", user=admin_user)
    before = counts()
    with pytest.raises(Conflict):
        services.queue_table_delete(user=admin_user, queue_table=queue_table)
    assert counts() == before
    assert Queue.objects.filter(pk=queue.pk).exists()


def test_deleting_an_exception_queue_another_queue_uses_is_refused(admin_user, queue):
    queue.refresh_from_db()
    before = counts()
    with pytest.raises(Conflict):
        services.queue_delete(user=admin_user, queue=queue.exception_queue)
    assert counts() == before


def test_an_empty_queue_table_is_deleted_with_its_queues(admin_user, queue_table, queue):
    services.queue_table_delete(user=admin_user, queue_table=queue_table)
    assert not QueueTable.objects.exists()
    assert not Queue.objects.exists()


def test_a_subscriber_on_a_single_consumer_queue_is_refused(admin_user, queue, unchanged):
    unchanged()
    with pytest.raises(DomainError) as err:
        services.subscriber_add(user=admin_user, queue=queue, name="A")
    assert err.value.field == "queue"


@LIVE
@pytest.mark.parametrize(
    "message, field",
    [
        (engine.NewMessage(payload={"price": Decimal("1.50")}), "payload"),
        (engine.NewMessage(payload={"tags": {"a", "b"}}), "payload"),
        (engine.NewMessage(payload=10**5000), "payload"),
        (engine.NewMessage(payload={}, headers={"at": datetime(2026, 1, 1)}), "headers"),
    ],
    ids=["Decimal", "set", "5001 digits", "datetime header"],
)
def test_a_python_value_that_is_not_json_is_refused_naming_its_field(queue, message, field):
    """A Python caller of the engine (not the API, whose input is JSON already) gets the field
    named, and nothing is stored, rather than an error from the enqueue's own encoding."""
    with psycopg.connect(services.conninfo()) as conn:
        info = engine.queue_info(conn, queue.pk)
        with pytest.raises(engine.InvalidMessage) as err:
            engine.enqueue(conn, info, [message])
        assert err.value.field == field
        assert "Not JSON" in str(err.value)
        conn.rollback()
        with pytest.raises(engine.InvalidMessage) as err:
            engine.enqueue(conn, info, [engine.NewMessage(payload=1), message])
        assert err.value.field == f"messages[1].{field}"
        conn.rollback()
    assert not Message.objects.exists()
