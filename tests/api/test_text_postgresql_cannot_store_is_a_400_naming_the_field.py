"""Text PostgreSQL cannot store (a NUL, a lone surrogate) anywhere in a body, in a key or a
value, at any depth, is a 400 naming the place; nothing is written. The JSON is sent as a client
would write it (``\\u0000``, ``\\ud800`` escapes)."""

from __future__ import annotations

import json

import pytest

from rules.models import Rule

NUL, SURROGATE = "a\x00b", "\ud800"


def _post(client, url: str, body: object):  # type: ignore[no-untyped-def]
    # json.dumps escapes both (ensure_ascii), as a hostile client sends them.
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (lambda b: {"payload": {"t": b}}, "payload.t"),
        (lambda b: {"payload": {"items": [1, {"sku": b}]}}, "payload.items[1].sku"),
        (lambda b: {"payload": b}, "payload"),
        (lambda b: {"payload": 1, "headers": {"h": b}}, "headers.h"),
        (lambda b: {"payload": 1, "headers": {b: "v"}}, "headers"),
        (lambda b: {"payload": 1, "correlation": b}, "correlation"),
        (lambda b: {"payload": 1, "sender": b}, "sender"),
        (lambda b: {"payload": 1, "recipients": ["A", b]}, "recipients[1]"),
        (lambda b: {"messages": [{"payload": 1}, {"payload": [b]}]}, "messages[1].payload[0]"),
    ],
)
def test_enqueue_refuses_it_naming_the_place(admin_api, queue, snapshot, bad, body, field):
    before = snapshot()

    response = _post(admin_api, "/api/queues/ORDERS/enqueue/", body(bad))

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert "PostgreSQL" in response.json()[field][0]
    before.assert_unchanged()


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/rules/", lambda b: {"name": "R1", "condition": "1 = 1", "comment": b}, "comment"),
        ("/api/rules/", lambda b: {"name": "R1", "condition": b}, "condition"),
        (
            "/api/rules/",
            lambda b: {"name": "R1", "condition": "1 = 1", "action_context": {"k": b}},
            "action_context.k",
        ),
        (
            "/api/rules/",
            lambda b: {"name": "R1", "condition": "1=1", "evaluation_context": b},
            "evaluation_context",
        ),
        ("/api/queue-tables/", lambda b: {"name": "QT9", "comment": b}, "comment"),
        (
            "/api/queues/ORDERS/dequeue/",
            lambda b: {"mode": "BROWSE", "correlation": b},
            "correlation",
        ),
        ("/api/queues/ORDERS/dequeue/", lambda b: {"mode": "BROWSE", "condition": b}, "condition"),
        ("/api/queues/ORDERS/purge/", lambda b: {"correlation": b}, "correlation"),
        (
            "/api/propagations/",
            lambda b: {"name": "P1", "source_queue": b, "destination_queue": "ORDERS"},
            "source_queue",
        ),
    ],
)
def test_other_endpoints_refuse_it_naming_the_field(
    admin_api, queue, snapshot, bad, url, body, field
):
    before = snapshot()

    response = _post(admin_api, url, body(bad))

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Rule.objects.exists()
    before.assert_unchanged()


def test_a_nul_in_a_form_encoded_body_is_refused_too(admin_api, queue, snapshot):
    before = snapshot()

    response = admin_api.post(
        "/api/queues/ORDERS/purge/",
        "correlation=a%00b",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 400, response.content
    assert "correlation" in response.json()
    before.assert_unchanged()


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_numbers_that_are_not_finite_are_refused(admin_api, queue, snapshot, number):
    before = snapshot()

    response = admin_api.post(
        "/api/queues/ORDERS/enqueue/",
        f'{{"payload": {{"n": {number}}}}}',
        content_type="application/json",
    )

    assert response.status_code == 400, response.content
    before.assert_unchanged()
