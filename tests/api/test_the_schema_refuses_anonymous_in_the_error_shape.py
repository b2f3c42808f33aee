"""The schema's own refusal (YAML by default) has the Error component's two fields as plain
text, as every other refusal does: ``detail`` and ``code``, not an ErrorDetail's insides."""

from __future__ import annotations

import yaml
from rest_framework.test import APIClient


def test_an_anonymous_schema_request_gets_detail_and_code(db):
    response = APIClient().get("/api/schema/")

    assert response.status_code == 401
    assert yaml.safe_load(response.content) == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }


def test_an_anonymous_api_request_gets_detail_and_code_in_json(db):
    response = APIClient().get("/api/queues/")

    assert response.status_code == 401
    assert response.json() == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }
