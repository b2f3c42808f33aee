"""Every operation documents the errors it can answer (401 and 403 everywhere, 400 and 413 where
there is input, 404 on a route that names an object, 409 on a write) with one Error body, and
that body describes what the API really sends for each of them."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml
from django.conf import settings


@pytest.fixture
def schema(client, monitor_user) -> dict:
    client.force_login(monitor_user)
    return yaml.safe_load(client.get("/api/schema/").content)


def _operations(schema: dict):  # type: ignore[no-untyped-def]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def _error_ref(operation: dict, code: str) -> str | None:
    answer = operation["responses"].get(code)
    if answer is None:
        return None
    return answer["content"]["application/json"]["schema"].get("$ref")


def test_every_operation_documents_its_error_answers(schema):
    missing = []
    for path, method, operation in _operations(schema):
        expected = {"401", "403"}
        if method != "get" or operation.get("parameters") or "requestBody" in operation:
            expected |= {"400", "413"}
        if re.search(r"{\w+}", path):
            expected.add("404")
        if method in ("post", "put", "patch", "delete"):
            expected.add("409")
        for code in sorted(expected):
            if _error_ref(operation, code) != "#/components/schemas/Error":
                missing.append(f"{method.upper()} {path} {code}")

    assert len(list(_operations(schema))) > 170
    assert missing == []


def test_the_errors_of_every_kind_match_the_documented_body(
    schema, queue, admin_api, monitor_api, token_client
):
    from rest_framework.test import APIClient

    # A 3.0 schema: "nullable" aside, the Error component is plain JSON Schema.
    error = schema["components"]["schemas"]["Error"]
    answers = {
        401: APIClient().get("/api/queues/"),
        403: monitor_api.post("/api/queues/ORDERS/stop/", {}),
        404: admin_api.get("/api/queues/NO_SUCH_QUEUE/"),
        # A URL no route matches (the id pattern takes no dot) answers JSON too.
        "404 unrouted": admin_api.get("/api/privileges/1.5/"),
        400: admin_api.post("/api/queues/ORDERS/enqueue/", {"messages": [{"priority": "x"}]}),
        "400 what": admin_api.post("/api/queues/ORDERS/stop/", {"what": "everything"}),
        409: admin_api.post("/api/queues/", {"name": "orders", "queue_table": "QT_ORDERS"}),
        # A bulk action whose filter matches another number than expected: counts, not texts.
        "409 count": admin_api.post(
            "/api/queues/bulk/",
            {"action": "stop", "filter": {"q": "ORDERS"}, "expected_count": 99},
            format="json",
        ),
        "400 filter": admin_api.post(
            "/api/queues/bulk/", {"action": "stop", "filter": {"kind": "X"}}, format="json"
        ),
        413: admin_api.post(
            "/api/queues/ORDERS/enqueue/",
            json.dumps({"payload": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}),
            content_type="application/json",
        ),
    }

    for expected, response in answers.items():
        code = int(str(expected).split()[0])
        assert response.status_code == code, (expected, response.content)
        assert response["Content-Type"] == "application/json", (expected, response.content)
        jsonschema.validate(response.json(), error)
    assert "messages[0].payload" in answers[400].json()
    assert answers["409 count"].json()["expected_count"] == 99
    assert "filter.kind" in answers["400 filter"].json()
    assert answers["400 what"].json() == {"what": ["Use enqueue, dequeue or both."]}
