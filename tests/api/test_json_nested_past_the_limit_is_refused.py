"""JSON nested deeper than MAX_JSON_DEPTH (64) levels is refused before it is parsed, on every
endpoint that takes JSON, with a 400 naming the limit; nothing is written. 64 levels are fine."""

from __future__ import annotations

import pytest

from core.validators import MAX_JSON_DEPTH

# Each body nests its innermost value this many levels below the document's outermost object.
ENDPOINTS = [
    ("/api/queues/ORDERS/enqueue/", '{{"payload": {deep}}}'),
    ("/api/queues/ORDERS/enqueue/", '{{"messages": [{{"payload": 1, "headers": {deep}}}]}}'),
    ("/api/queues/ORDERS/dequeue/", '{{"mode": "BROWSE", "condition": {deep}}}'),
    ("/api/rules/", '{{"name": "R1", "condition": "1 = 1", "action_context": {deep}}}'),
    ("/api/evaluation-contexts/", '{{"name": "C1", "variables": {deep}}}'),
    ("/api/queue-tables/", '{{"name": "QT9", "payload_type": "T", "payload_schema": {deep}}}'),
    ("/api/propagations/", '{{"name": "P1", "source_queue": {deep}, "destination_queue": "X"}}'),
    ("/api/gateway/links/", '{{"linkname": "L1", "link_type": "AMQP", "properties": {deep}}}'),
    ("/api/queues/ORDERS/purge/", '{{"states": {deep}}}'),
]


def _nested(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


@pytest.mark.parametrize(("url", "template"), ENDPOINTS)
@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH, 1_000, 100_000])
def test_a_body_past_the_limit_is_a_400_naming_it(
    admin_api, queue, snapshot, url, template, levels
):
    before = snapshot()

    response = admin_api.post(
        url, template.format(deep=_nested(levels)), content_type="application/json"
    )

    assert response.status_code == 400, response.content
    assert str(MAX_JSON_DEPTH) in response.json()["detail"], response.json()
    before.assert_unchanged()


def test_brackets_inside_strings_do_not_count(admin_api, queue):
    text = "[{" * 500

    response = admin_api.post(
        "/api/queues/ORDERS/enqueue/",
        f'{{"payload": {{"text": "{text}\\" ]]"}}}}',
        content_type="application/json",
    )

    assert response.status_code == 201, response.content


def test_a_body_at_the_limit_is_taken(admin_api, queue):
    # The outermost object is level 1, so the payload may nest one level less.
    response = admin_api.post(
        "/api/queues/ORDERS/enqueue/",
        f'{{"payload": {_nested(MAX_JSON_DEPTH - 1)}}}',
        content_type="application/json",
    )

    assert response.status_code == 201, response.content


def test_the_page_forms_refuse_it_on_the_field(admin_client, queue):
    response = admin_client.post(
        f"/queues/{queue.pk}/enqueue/",
        {
            "payload": "[" * 10_000 + "]" * 10_000,
            "kind": "USER",
            "priority": "1",
            "delay": "0",
            "visibility": "ON_COMMIT",
        },
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-field="payload"' in page
    assert str(MAX_JSON_DEPTH) in page
