"""A session cookie PostgreSQL cannot hold (a NUL, which browsers and servers pass through) is
no session: the pages ask for a login, the API for credentials; never a server error."""

from __future__ import annotations

import pytest
from django.test import Client

COOKIE = "sessionid=aaaaaaaaaa\x00bbbbbbbbbbbbbbbbbbbbbb"


@pytest.mark.parametrize(
    ("path", "status"), [("/queues/", 302), ("/login/", 200), ("/api/queues/", 403)]
)
def test_the_cookie_is_no_session(db, path, status):
    response = Client().get(path, HTTP_COOKIE=COOKIE)

    assert response.status_code in (status, 401), response.content[:200]


def test_a_logged_in_session_still_works(admin_client):
    assert admin_client.get("/queues/").status_code == 200
