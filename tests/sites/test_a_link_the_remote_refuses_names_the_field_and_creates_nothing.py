"""Every way the remote can refuse a new link is a 400 naming the field at fault, with the
remote's reason, and nothing is written: no link, no change-log entry."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from sites.models import DatabaseLink
from tests.restarts.harness import free_port
from tests.sites.helpers import BLIND_PASSWORD, BLIND_USER

CASES = {
    "wrong password": ({"password": "not-the-password"}, "password", "password authentication"),
    "no password": ({"password": ""}, "password", "password"),
    # PostgreSQL's password check does not say whether the role exists.
    "unknown role": ({"username": "nobody_here"}, "password", "nobody_here"),
    "no such database": ({"database": "no_such_db"}, "database", "no_such_db"),
    "not a site": ({"database": "plain"}, "database", "not a site"),
    "role may not read the site": (
        {"username": BLIND_USER, "password": BLIND_PASSWORD},
        "username",
        "GRANT SELECT ON aq_site",
    ),
    "TLS the server does not offer": ({"sslmode": "require"}, "sslmode", "SSL"),
    "missing root certificate": (
        {"sslmode": "verify-full", "sslrootcert": "/nonexistent/root.crt"},
        "sslrootcert",
        "/nonexistent/root.crt",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_api_names_the_field_the_remote_refused(admin_api, site, case):
    overrides, field, words = CASES[case]

    response = admin_api.post("/api/db-links/", {"name": "BAD", **site.link_fields(**overrides)})

    assert response.status_code == 400, response.json()
    body = response.json()
    assert list(body) == [field], body
    assert words in body[field][0], body
    assert not DatabaseLink.objects.exists()
    assert not ChangeLogEntry.objects.filter(object_type="sites.databaselink").exists()


def test_a_port_nothing_listens_on_is_unreachable_naming_the_port(admin_api, site):
    port = free_port()

    response = admin_api.post("/api/db-links/", {"name": "BAD", **site.link_fields(port=port)})

    assert response.status_code == 400
    [message] = response.json()["port"]
    assert f"127.0.0.1:{port}" in message and "cannot be reached" in message
    assert not DatabaseLink.objects.exists()


def test_the_create_page_shows_the_refusal_next_to_the_field(admin_client, site):
    fields = site.link_fields(password="not-the-password")

    response = admin_client.post("/sites/links/add/", {"name": "BAD", **fields})

    assert response.status_code == 400
    form = response.context["form"]
    assert "password authentication" in form.errors["password"][0]
    assert not DatabaseLink.objects.exists()
