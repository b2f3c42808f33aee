"""The OpenAPI schema and its docs page need a login and a role, like every other page: anonymous
gets 401 for the schema and the login page for the docs; a user with no role gets 403; every
role may read both."""

from __future__ import annotations

import pytest
import yaml
from rest_framework.test import APIClient


def test_anonymous_gets_401_for_the_schema(db):
    response = APIClient().get("/api/schema/")

    assert response.status_code == 401
    assert "detail" in yaml.safe_load(response.content)


def test_anonymous_is_sent_to_the_login_page_from_the_docs(client, db):
    response = client.get("/api/docs/")

    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/api/docs/"


def test_a_user_without_a_role_may_read_neither(client, token_client, roleless_user):
    client.force_login(roleless_user)

    assert client.get("/api/schema/").status_code == 403
    assert client.get("/api/docs/").status_code == 403
    assert token_client(roleless_user).get("/api/schema/").status_code == 403


@pytest.mark.parametrize("role", ["monitor_user", "operator_user", "admin_user"])
def test_every_role_reads_the_schema_and_the_docs(request, client, token_client, role):
    user = request.getfixturevalue(role)
    client.force_login(user)

    by_session = client.get("/api/schema/")
    by_token = token_client(user).get("/api/schema/")
    docs = client.get("/api/docs/")

    assert by_session.status_code == by_token.status_code == 200
    assert b"/api/queues/{id}/enqueue/" in by_token.content
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
