"""A delay or an expiration too long for a date (``1e308`` seconds) is a 400 naming the field,
from the API, the page and any other caller of the engine; ten years is the documented limit."""

from __future__ import annotations

import pytest

from core.validators import MAX_SECONDS
from queues import engine, services
from queues.models import Message


@pytest.mark.parametrize("field", ["delay", "expiration"])
@pytest.mark.parametrize("seconds", [1e308, MAX_SECONDS + 1])
def test_the_api_refuses_it_naming_the_field(admin_api, queue, snapshot, field, seconds):
    before = snapshot()

    response = admin_api.post(
        "/api/queues/ORDERS/enqueue/", {"payload": 1, field: seconds}, format="json"
    )

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert str(MAX_SECONDS) in response.json()[field][0]
    before.assert_unchanged()


def test_ten_years_is_accepted(admin_api, queue):
    response = admin_api.post(
        "/api/queues/ORDERS/enqueue/",
        {"payload": 1, "delay": MAX_SECONDS, "expiration": MAX_SECONDS},
        format="json",
    )

    assert response.status_code == 201, response.content


def test_the_engine_refuses_it_for_every_caller(admin_user, queue):
    with pytest.raises(engine.InvalidMessage) as refused:
        services.message_enqueue(
            user=admin_user, queue=queue, messages=[engine.NewMessage(payload=1, delay=1e308)]
        )

    assert refused.value.field == "delay"
    assert not Message.objects.exists()


def test_the_page_refuses_it_on_the_field(admin_client, queue):
    response = admin_client.post(
        f"/queues/{queue.pk}/enqueue/",
        {
            "payload": "1",
            "kind": "USER",
            "priority": "1",
            "delay": "1e308",
            "visibility": "ON_COMMIT",
        },
    )

    assert response.status_code == 400
    assert 'data-field="delay"' in response.content.decode()
    assert not Message.objects.exists()


@pytest.mark.parametrize("field", ["retry_delay", "retention_time"])
def test_a_queue_refuses_a_retry_delay_or_retention_past_the_limit(
    admin_api, queue_table, queue, snapshot, field
):
    before = snapshot()

    created = admin_api.post(
        "/api/queues/", {"name": "Q9", "queue_table": "QT_ORDERS", field: 1e308}, format="json"
    )
    changed = admin_api.patch("/api/queues/ORDERS/", {field: MAX_SECONDS + 1}, format="json")

    for response in (created, changed):
        assert response.status_code == 400, response.content
        assert field in response.json(), response.json()
    before.assert_unchanged()
