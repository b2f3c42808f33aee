"""An Authorization header whose token PostgreSQL cannot hold (a NUL, which HTTP servers pass
through) is an invalid token, 401, like any unknown token; never a server error."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient


@pytest.mark.parametrize("token", ["a\x00b", "\x00", "\u00b9", "x" * 10_000])
def test_the_token_is_invalid(db, token):
    response = APIClient().get("/api/queues/", HTTP_AUTHORIZATION=f"Token {token}")

    assert response.status_code == 401, response.content
    assert "token" in response.json()["detail"].lower()


def test_the_schema_still_names_the_token_scheme(admin_api):
    schema = admin_api.get("/api/schema/?format=json").json()

    assert "tokenAuth" in schema["components"]["securitySchemes"]
