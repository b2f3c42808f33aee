"""Bad input through the console's forms: the form comes back (400) with the error on the field,
never a 500, and nothing is written."""

from __future__ import annotations

import pytest

from queues import services
from queues.models import Message, Queue, QueueTable

QUEUE_FORM = {
    "kind": "NORMAL_QUEUE",
    "max_retries": 5,
    "retry_delay": 0,
    "retention_time": 0,
    "enqueue_enabled": "on",
    "dequeue_enabled": "on",
}
ENQUEUE_FORM = {"kind": "USER", "priority": 1, "delay": 0, "visibility": "ON_COMMIT"}
DEQUEUE_FORM = {"mode": "REMOVE", "navigation": "FIRST_MESSAGE", "batch": 1, "wait": 0}


def _assert_form_error(response, field: str, text: str = "") -> str:  # type: ignore[no-untyped-def]
    html = response.content.decode()
    assert response.status_code == 400, html[:3000]
    assert f'data-field="{field}"' in html, html[:5000]
    if text:
        assert text in html
    return html


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": "1BAD", "sort_order": "enq_time"}, "name"),
        ({"name": "bad name", "sort_order": "enq_time"}, "name"),
        ({"name": "", "sort_order": "enq_time"}, "name"),
        ({"name": "QT_X", "sort_order": "random"}, "sort_order"),
        ({"name": "QT_X", "sort_order": "enq_time", "payload_type": "ORDER"}, "payload_schema"),
        (
            {
                "name": "QT_X",
                "sort_order": "enq_time",
                "payload_type": "ORDER",
                "payload_schema": "{",
            },
            "payload_schema",
        ),
        (
            {
                "name": "QT_X",
                "sort_order": "enq_time",
                "payload_type": "ORDER",
                "payload_schema": '{"type": "nonsense"}',
            },
            "payload_schema",
        ),
    ],
)
def test_a_bad_queue_table_form_names_the_field(admin_client, snapshot, data, field):
    before = snapshot()

    response = admin_client.post("/queues/tables/add/", {"payload_type": "ANY", **data})

    _assert_form_error(response, field)
    before.assert_unchanged()


def test_a_duplicate_queue_table_name_is_a_form_error_on_name(admin_client, queue_table, snapshot):
    before = snapshot()

    response = admin_client.post(
        "/queues/tables/add/",
        {"name": "qt_orders", "sort_order": "enq_time", "payload_type": "ANY"},
    )

    _assert_form_error(response, "name", "already exists")
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": "9Q"}, "name"),
        ({"name": "Q-1"}, "name"),
        ({"name": "Q", "max_retries": -1}, "max_retries"),
        ({"name": "Q", "retry_delay": -1}, "retry_delay"),
        ({"name": "Q", "retention_time": -0.5}, "retention_time"),
        ({"name": "Q", "kind": "WEIRD"}, "kind"),
        ({"name": "Q", "queue_table": ""}, "queue_table"),
        ({"name": "orders"}, "name"),
    ],
)
def test_a_bad_queue_form_names_the_field(admin_client, queue, snapshot, data, field):
    before = snapshot()
    form = {**QUEUE_FORM, "queue_table": queue.queue_table_id, **data}

    response = admin_client.post("/queues/add/", form)

    _assert_form_error(response, field)
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"retry_delay": -3}, "retry_delay"),
        ({"retention_time": -3}, "retention_time"),
        ({"max_retries": "many"}, "max_retries"),
    ],
)
def test_a_bad_queue_edit_names_the_field(admin_client, queue, snapshot, data, field):
    before = snapshot()
    form = {"max_retries": 5, "retry_delay": 0, "retention_time": 0, **data}

    response = admin_client.post(f"/queues/{queue.pk}/edit/", form)

    _assert_form_error(response, field)
    before.assert_unchanged()


def test_a_payload_failing_the_schema_names_the_path_on_the_payload_field(
    operator_client, typed_queue, snapshot
):
    before = snapshot()
    payload = '{"order_id": 1, "items": [{"sku": "A", "qty": "two"}]}'

    response = operator_client.post(
        f"/queues/{typed_queue.pk}/enqueue/", {**ENQUEUE_FORM, "payload": payload}
    )

    _assert_form_error(response, "payload", "payload.items[0].qty")
    before.assert_unchanged()


def test_a_payload_that_is_not_json_names_payload(operator_client, queue, snapshot):
    before = snapshot()

    response = operator_client.post(
        f"/queues/{queue.pk}/enqueue/", {**ENQUEUE_FORM, "payload": "{not json"}
    )

    _assert_form_error(response, "payload")
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"delay": -1}, "delay"),
        ({"expiration": -1}, "expiration"),
        ({"priority": "high"}, "priority"),
        ({"kind": "PARCEL"}, "kind"),
        ({"visibility": "LATER"}, "visibility"),
        ({"recipients": "BILLING"}, "recipients"),
    ],
)
def test_a_bad_enqueue_form_names_the_field(operator_client, queue, snapshot, data, field):
    before = snapshot()

    response = operator_client.post(
        f"/queues/{queue.pk}/enqueue/", {**ENQUEUE_FORM, "payload": "1", **data}
    )

    _assert_form_error(response, field)
    before.assert_unchanged()


def test_enqueue_into_a_stopped_queue_says_it_is_disabled(
    admin_user, operator_client, queue, snapshot
):
    services.queue_stop(user=admin_user, queue=queue)
    before = snapshot()

    response = operator_client.post(
        f"/queues/{queue.pk}/enqueue/", {**ENQUEUE_FORM, "payload": "1"}
    )

    _assert_form_error(response, "__all__", "disabled")
    before.assert_unchanged()


def test_dequeue_on_a_multi_consumer_queue_without_consumer_names_consumer_name(
    operator_client, multi_queue, enqueue_some, snapshot
):
    enqueue_some(multi_queue, 1)
    before = snapshot()

    response = operator_client.post(f"/queues/{multi_queue.pk}/dequeue/", DEQUEUE_FORM)

    _assert_form_error(response, "consumer_name")
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field"),
    [({"batch": 0}, "batch"), ({"wait": -1}, "wait"), ({"mode": "GRAB"}, "mode")],
)
def test_a_bad_dequeue_form_names_the_field(operator_client, queue, snapshot, data, field):
    before = snapshot()

    response = operator_client.post(f"/queues/{queue.pk}/dequeue/", {**DEQUEUE_FORM, **data})

    _assert_form_error(response, field)
    before.assert_unchanged()


def test_a_purge_without_the_right_confirmation_names_confirm(
    operator_client, queue, enqueue_some, snapshot
):
    enqueue_some(queue, 1)
    before = snapshot()

    response = operator_client.post(f"/queues/{queue.pk}/purge/", {"confirm": "OTHER"})

    _assert_form_error(response, "confirm", "ORDERS")
    before.assert_unchanged()


def test_a_purge_with_bad_ids_names_ids(operator_client, queue, enqueue_some, snapshot):
    enqueue_some(queue, 1)
    before = snapshot()

    response = operator_client.post(
        f"/queues/{queue.pk}/purge/", {"confirm": "ORDERS", "ids": "1, x"}
    )

    _assert_form_error(response, "ids")
    before.assert_unchanged()


def test_a_replay_with_bad_ids_names_ids(operator_client, expired_message, snapshot):
    _, exq, _ = expired_message
    before = snapshot()

    response = operator_client.post(f"/queues/{exq.pk}/replay/", {"ids": "abc"})

    _assert_form_error(response, "ids")
    before.assert_unchanged()


def test_a_bad_subscriber_name_is_a_form_error(admin_client, multi_queue, snapshot):
    before = snapshot()

    response = admin_client.post(f"/queues/{multi_queue.pk}/subscribers/add/", {"name": "1X"})

    _assert_form_error(response, "name")
    before.assert_unchanged()


def test_a_duplicate_subscriber_is_a_form_error_on_name(admin_client, multi_queue, snapshot):
    before = snapshot()

    response = admin_client.post(f"/queues/{multi_queue.pk}/subscribers/add/", {"name": "billing"})

    _assert_form_error(response, "name", "already subscribes")
    before.assert_unchanged()


def test_a_duplicate_agent_is_a_form_error_on_name(admin_client, admin_user, snapshot):
    services.agent_create(user=admin_user, name="APP1")
    before = snapshot()

    response = admin_client.post("/queues/agents/add/", {"name": "app1"})

    _assert_form_error(response, "name")
    before.assert_unchanged()


def test_deleting_a_queue_with_messages_is_refused_with_a_message(
    admin_client, queue, enqueue_some, snapshot
):
    enqueue_some(queue, 1)
    before = snapshot()

    response = admin_client.post(f"/queues/{queue.pk}/delete/", follow=True)

    assert response.status_code == 200
    assert "purge first" in response.content.decode()
    before.assert_unchanged()
    assert Message.objects.count() == 1


def test_deleting_a_queue_table_with_messages_is_refused_with_a_message(
    admin_client, queue, enqueue_some, snapshot
):
    enqueue_some(queue, 1)
    before = snapshot()

    response = admin_client.post(f"/queues/tables/{queue.queue_table_id}/delete/", follow=True)

    assert response.status_code == 200
    assert "still holds 1 message" in response.content.decode()
    before.assert_unchanged()
    assert QueueTable.objects.filter(pk=queue.queue_table_id).exists()
    assert Queue.objects.filter(pk=queue.pk).exists()


@pytest.mark.parametrize(
    "path",
    [
        "/queues/999999/",
        "/queues/999999/edit/",
        "/queues/tables/999999/",
        "/queues/999999/enqueue/",
        "/changelog/999999/",
    ],
)
def test_an_unknown_object_is_a_404(admin_client, path):
    assert admin_client.get(path).status_code == 404


def test_posting_to_an_unknown_queue_is_a_404(operator_client, snapshot):
    before = snapshot()

    response = operator_client.post("/queues/999999/purge/", {"confirm": "X"})

    assert response.status_code == 404
    before.assert_unchanged()
