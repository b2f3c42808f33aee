"""A rule's action context is name/value pairs: a number, a string or a list is a 400 naming
``action_context``, on create and on update; nothing is written."""

from __future__ import annotations

import pytest

from rules import services
from rules.models import Rule


@pytest.mark.parametrize("value", [5, "text", [1, 2], True, 1.5])
def test_create_refuses_it(admin_api, snapshot, value):
    before = snapshot()

    response = admin_api.post(
        "/api/rules/", {"name": "R1", "condition": "1 = 1", "action_context": value}, format="json"
    )

    assert response.status_code == 400, response.content
    assert "action_context" in response.json(), response.json()
    assert not Rule.objects.exists()
    before.assert_unchanged()


@pytest.mark.parametrize("value", [5, "text", [1, 2]])
def test_update_refuses_it(admin_api, admin_user, value):
    services.rule_create(user=admin_user, name="R1", condition="1 = 1", action_context={"a": 1})

    response = admin_api.patch("/api/rules/R1/", {"action_context": value}, format="json")

    assert response.status_code == 400, response.content
    assert "action_context" in response.json(), response.json()
    assert Rule.objects.get(name="R1").action_context == {"a": 1}


def test_an_object_is_taken(admin_api):
    made = admin_api.post(
        "/api/rules/", {"name": "R1", "condition": "1 = 1", "action_context": {}}, format="json"
    )
    changed = admin_api.patch("/api/rules/R1/", {"action_context": {"k": [1]}}, format="json")

    assert made.status_code == 201, made.content
    assert changed.status_code == 200, changed.content
    assert Rule.objects.get(name="R1").action_context == {"k": [1]}
