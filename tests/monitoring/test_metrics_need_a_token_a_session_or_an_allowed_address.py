"""Who may scrape: a token or session with the VIEW capability, or an address in
AQ_METRICS_ALLOW (loopback by default). Everyone else gets 401 or 403, never a server error."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

AWAY = {"REMOTE_ADDR": "192.0.2.7"}


def _token(user) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"HTTP_AUTHORIZATION": f"Token {Token.objects.get_or_create(user=user)[0].key}"}


def test_an_anonymous_client_away_from_the_allow_list_gets_a_401(client):
    response = client.get("/metrics", **AWAY)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")
    assert response.json() == {"detail": "Authentication credentials were not provided."}


def test_loopback_may_scrape_without_a_token_by_default(client):
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200


def test_a_viewers_token_scrapes_from_anywhere(client, monitor_user):
    response = client.get("/metrics", **AWAY, **_token(monitor_user))

    assert response.status_code == 200
    assert b"aq_queues " in response.content


def test_a_session_with_a_role_scrapes(monitor_client):
    assert monitor_client.get("/metrics", **AWAY).status_code == 200


def test_a_bad_token_is_refused_even_from_loopback(client):
    response = client.get("/metrics", HTTP_AUTHORIZATION="Token nope", REMOTE_ADDR="127.0.0.1")

    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}


@pytest.mark.parametrize("header", ["Bearer abc", "Token", "Token a b", "Token a\x00b"])
def test_other_schemes_and_malformed_headers_are_a_401(client, header):
    assert client.get("/metrics", HTTP_AUTHORIZATION=header, **AWAY).status_code == 401


def test_a_user_without_a_role_gets_a_403(client, roleless_user):
    assert client.get("/metrics", **AWAY, **_token(roleless_user)).status_code == 403
    session = Client()
    session.force_login(roleless_user)
    assert session.get("/metrics", **AWAY).status_code == 403


def test_the_allow_list_is_a_setting(client, settings):
    settings.AQ_METRICS_ALLOW = []
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 401

    settings.AQ_METRICS_ALLOW = ["192.0.2.0/24"]
    assert client.get("/metrics", **AWAY).status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="198.51.100.1").status_code == 401


def test_only_get_is_served(client):
    assert client.post("/metrics").status_code == 405
