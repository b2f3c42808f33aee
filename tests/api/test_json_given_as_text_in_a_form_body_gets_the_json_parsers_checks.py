"""The API also takes form and multipart bodies, where a JSON field arrives as text that the
serializer parses, past the JSON parser: it gets the same checks. Nested past MAX_JSON_DEPTH, a
NUL or a lone surrogate escape, or a non-finite number is a 400 naming the field (and the place
inside it); nothing is written. Before, deep JSON was a RecursionError and a NUL a DataError (500)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from core.validators import MAX_JSON_DEPTH

DEEP = "[" * 1_000 + "]" * 1_000

CASES = [
    ("/api/queues/ORDERS/enqueue/", {"payload": DEEP}, "payload"),
    ("/api/rules/", {"name": "R1", "condition": "1 = 1", "action_context": DEEP}, "action_context"),
    (
        "/api/rules/",
        {"name": "R1", "condition": "1 = 1", "action_context": '{"a": "x\\u0000y"}'},
        "action_context.a",
    ),
    (
        "/api/rules/",
        {"name": "R1", "condition": "1 = 1", "action_context": '{"a": "\\ud800"}'},
        "action_context.a",
    ),
    (
        "/api/rules/",
        {"name": "R1", "condition": "1 = 1", "action_context": '{"a": 1e400}'},
        "action_context.a",
    ),
    (
        "/api/queue-tables/",
        {"name": "QT9", "payload_type": "T", "payload_schema": DEEP},
        "payload_schema",
    ),
    ("/api/trace/", {"queue": "ORDERS", "message": DEEP}, "message"),
]


@pytest.mark.parametrize("form_format", ["multipart", "urlencoded"])
@pytest.mark.parametrize(("url", "body", "field"), CASES)
def test_a_json_field_given_as_form_text_is_checked_like_a_json_body(
    admin_api, queue, snapshot, url, body, field, form_format
):
    before = snapshot()

    if form_format == "multipart":
        response = admin_api.post(url, body, format="multipart")
    else:
        response = admin_api.generic(
            "POST", url, urlencode(body), content_type="application/x-www-form-urlencoded"
        )

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    before.assert_unchanged()


def test_the_depth_refusal_names_the_limit(admin_api, queue):
    response = admin_api.post("/api/queues/ORDERS/enqueue/", {"payload": DEEP}, format="multipart")

    assert str(MAX_JSON_DEPTH) in response.json()["payload"][0], response.json()


def test_json_the_checks_accept_still_goes_in(admin_api, queue):
    response = admin_api.post(
        "/api/rules/",
        {"name": "R1", "condition": "1 = 1", "action_context": '{"a": {"b": "é"}}'},
        format="multipart",
    )

    assert response.status_code == 201, response.content
    assert response.json()["action_context"] == {"a": {"b": "é"}}
