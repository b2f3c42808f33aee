"""Issue 16: "NOT A TYPE!!" was taken as a queue table's payload type. The service refuses what
is not a type name (ANY, NAME or SCHEMA.NAME), for the form and the API alike, naming the field."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object"}


def test_a_payload_type_that_is_no_type_name_is_refused_on_its_field(admin_client, admin_api):
    from queues.models import QueueTable

    response = admin_client.post(
        "/queues/tables/add/",
        {
            "name": "QT_BAD",
            "sort_order": "enq_time",
            "payload_type": "NOT A TYPE!!",
            "payload_schema": json.dumps(SCHEMA),
            "message_grouping": "NONE",
        },
    )
    assert response.status_code == 400
    assert 'data-field="payload_type"' in response.content.decode()

    body = {"name": "QT_BAD", "payload_type": "NOT A TYPE!!", "payload_schema": SCHEMA}
    response = admin_api.post("/api/queue-tables/", body, format="json")
    assert response.status_code == 400, response.content
    assert "payload_type" in response.json()
    assert not QueueTable.objects.filter(name="QT_BAD").exists()

    body = {"name": "QT_GOOD", "payload_type": "HR.ORDER_T", "payload_schema": SCHEMA}
    assert admin_api.post("/api/queue-tables/", body, format="json").status_code == 201
