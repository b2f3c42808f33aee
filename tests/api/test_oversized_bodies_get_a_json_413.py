"""A body over Django's limits (DATA_UPLOAD_MAX_MEMORY_SIZE, DATA_UPLOAD_MAX_NUMBER_FIELDS) gets a
JSON 413 naming the limit from the API, wherever the body is read; nothing is written."""

from __future__ import annotations

import json

import pytest
from django.conf import settings


def _big_json() -> str:
    return json.dumps({"payload": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})


@pytest.mark.parametrize(
    "url",
    ["/api/queues/ORDERS/enqueue/", "/api/rules/", "/api/propagations/", "/api/gateway/links/"],
)
def test_a_body_over_the_memory_limit_is_a_413_naming_it(admin_api, queue, snapshot, url):
    before = snapshot()

    response = admin_api.post(url, _big_json(), content_type="application/json")

    assert response.status_code == 413, response.content
    body = response.json()
    assert body["code"] == "request_too_large"
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in body["detail"]
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in body["detail"]
    before.assert_unchanged()


def test_too_many_form_fields_is_a_413_naming_the_limit(admin_api, queue, snapshot):
    before = snapshot()
    fields = "&".join(f"f{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))

    response = admin_api.post(
        "/api/queues/ORDERS/purge/", fields, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 413, response.content
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.json()["detail"]
    before.assert_unchanged()


def test_a_body_read_before_any_view_is_a_json_413_too(client, admin_user, queue, snapshot):
    """Logged in by session, the CSRF check reads the form body before DRF does: Django's
    handler400 answers, still in JSON under /api/."""
    client.force_login(admin_user)
    before = snapshot()

    response = client.post(
        "/api/queues/ORDERS/purge/",
        "a=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 413, response.content
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in response.json()["detail"]
    before.assert_unchanged()
