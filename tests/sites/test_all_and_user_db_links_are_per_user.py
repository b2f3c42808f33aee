"""ALL_DB_LINKS (the links a user may use: their own and the PUBLIC ones) and USER_DB_LINKS
(their own), with Oracle's columns, on /status/ and the API, each as the requesting user sees
it; DBA_DB_LINKS still shows every link."""

from __future__ import annotations

import pytest

from sites.models import DatabaseLink

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_links(site, admin_user, operator_user):
    from sites import services

    services.database_link_create(user=admin_user, name="ALICES", **site.link_fields())
    services.database_link_create(user=None, name="SHARED", **site.link_fields())  # PUBLIC
    services.database_link_create(user=admin_user, name="OSCARS", **site.link_fields())
    DatabaseLink.objects.filter(name="OSCARS").update(owner=operator_user)


def _rows(client, view: str) -> list[dict]:
    response = client.get(f"/api/status/{view}/")
    assert response.status_code == 200, response.content
    body = response.json()
    return body["results"] if isinstance(body, dict) else body


def test_all_db_links_are_ones_own_and_the_public_ones(admin_api, operator_api, three_links):
    alice = _rows(admin_api, "all_db_links")
    oscar = _rows(operator_api, "all_db_links")

    assert [(r["owner"], r["db_link"]) for r in alice] == [
        ("alice", "ALICES"),
        ("PUBLIC", "SHARED"),
    ]
    assert [(r["owner"], r["db_link"]) for r in oscar] == [
        ("oscar", "OSCARS"),
        ("PUBLIC", "SHARED"),
    ]
    assert set(alice[0]) == {"owner", "db_link", "username", "host", "created"}


def test_user_db_links_are_ones_own(admin_api, operator_api, three_links, site):
    alice = _rows(admin_api, "user_db_links")

    assert [r["db_link"] for r in alice] == ["ALICES"]
    assert alice[0]["host"] == f"127.0.0.1:{site.port}/site_b"
    assert set(alice[0]) == {"db_link", "username", "host", "created"}  # never a password
    assert [r["db_link"] for r in _rows(operator_api, "user_db_links")] == ["OSCARS"]


def test_dba_db_links_still_shows_every_link(admin_api, three_links):
    assert [r["db_link"] for r in _rows(admin_api, "dba_db_links")] == [
        "ALICES",
        "OSCARS",
        "SHARED",
    ]


def test_the_status_page_shows_the_requesting_users_rows(operator_client, three_links):
    response = operator_client.get("/status/", {"view": "user_db_links"})
    text = response.content.decode()
    assert response.status_code == 200
    assert "OSCARS" in text and "ALICES" not in text and "SHARED" not in text
    assert "DB_LINK" in text and "OWNER_ID" not in text

    response = operator_client.get("/status/", {"view": "all_db_links"})
    text = response.content.decode()
    assert "OSCARS" in text and "SHARED" in text and "ALICES" not in text
