"""An enqueue or dequeue body with a key the call does not take is a 400 naming that key, and
nothing is enqueued or dequeued: DRF would drop the key without a word, so a misspelt property
(``priorty``) or one given at the wrong level (``delivery_mode`` inside a message) would store the
message with the default instead. The schema says so (additionalProperties: false)."""

from __future__ import annotations

from typing import Any

import pytest

from queues.models import Message

URL = "/api/queues/ORDERS/"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"payload": {"n": 1}, "priorty": 3}, "priorty"),
        ({"messages": [{"payload": {"n": 1}, "priorty": 3}]}, "messages[0].priorty"),
        (
            {
                "messages": [
                    {"payload": {"n": 1}},
                    {"payload": {"n": 2}, "delivery_mode": "BUFFERED"},
                ]
            },
            "messages[1].delivery_mode",
        ),
        # A message's property beside the list applies to no message.
        ({"messages": [{"payload": {"n": 1}}], "priority": 5}, "priority"),
    ],
)
def test_an_enqueue_with_an_unknown_key_is_refused_naming_it(
    admin_api, queue, snapshot, body: dict[str, Any], field: str
) -> None:
    before = snapshot()

    response = admin_api.post(URL + "enqueue/", body, format="json")

    assert response.status_code == 400, response.content
    assert list(response.json()) == [field], response.json()
    assert "Unknown field" in response.json()[field][0]
    before.assert_unchanged()


def test_the_one_message_form_still_takes_the_calls_own_keys(admin_api, queue) -> None:
    body = {"payload": {"n": 1}, "priority": 4, "visibility": "ON_COMMIT"}

    response = admin_api.post(URL + "enqueue/", body, format="json")

    assert response.status_code == 201, response.content
    assert Message.objects.get().priority == 4


def test_a_form_post_may_carry_its_csrf_token(admin_api, queue) -> None:
    body = {"payload": '{"n": 1}', "csrfmiddlewaretoken": "x", "correlation": "C1"}

    response = admin_api.post(URL + "enqueue/", body, format="multipart")

    assert response.status_code == 201, response.content
    assert Message.objects.get().correlation == "C1"


def test_a_dequeue_with_an_unknown_key_is_refused_and_takes_nothing(admin_api, queue) -> None:
    assert admin_api.post(URL + "enqueue/", {"payload": {"n": 1}}, format="json").status_code == 201

    response = admin_api.post(URL + "dequeue/", {"consumer": "APP"}, format="json")

    assert response.status_code == 400, response.content
    assert list(response.json()) == ["consumer"], response.json()
    assert Message.objects.get().state == "READY"


def test_the_request_schema_closes_the_message_and_dequeue_bodies(admin_api) -> None:
    schemas = admin_api.get("/api/schema/?format=json").json()["components"]["schemas"]

    assert schemas["NewMessageRequest"]["additionalProperties"] is False
    assert schemas["DequeueRequest"]["additionalProperties"] is False
    # The enqueue body takes one message's keys at the top level too: its schema stays open.
    assert "additionalProperties" not in schemas["EnqueueRequest"]
