"""Message headers given as JSON text in a form or multipart body are read as the object they
are (DRF's DictField read only ``headers.key`` fields and silently stored ``{}``); text that is
not a JSON object is a 400 naming ``headers``, and nothing is enqueued."""

from __future__ import annotations

import pytest

from queues.models import Message


@pytest.mark.parametrize("form_format", ["multipart", "json"])
def test_headers_given_as_text_reach_the_message(admin_api, queue, form_format):
    body = {"payload": '{"n": 1}', "headers": '{"region": "eu", "n": 2}'}
    if form_format == "json":
        body = {"payload": {"n": 1}, "headers": {"region": "eu", "n": 2}}

    response = admin_api.post("/api/queues/ORDERS/enqueue/", body, format=form_format)

    assert response.status_code == 201, response.content
    assert Message.objects.get().headers == {"region": "eu", "n": 2}


@pytest.mark.parametrize("headers", ["[1, 2]", '"text"', "7", "not json"])
def test_headers_that_are_not_a_json_object_are_refused(admin_api, queue, headers):
    response = admin_api.post(
        "/api/queues/ORDERS/enqueue/", {"payload": "1", "headers": headers}, format="multipart"
    )

    assert response.status_code == 400, response.content
    assert "headers" in response.json(), response.json()
    assert not Message.objects.exists()
