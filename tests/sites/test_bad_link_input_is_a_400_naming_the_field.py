"""Input that cannot be a link is refused before the remote is asked: a 400 naming the field,
in the API's Error shape and on the page's form, never a 500, nothing written."""

from __future__ import annotations

import pytest

from sites.models import DatabaseLink

BAD = {
    "name starting with a digit": ({"name": "1SITE"}, "name"),
    "name with a dot": ({"name": "SITE.B"}, "name"),
    "name too long": ({"name": "S" * 129}, "name"),
    "name with NUL": ({"name": "SI\x00TE"}, "name"),
    "no name": ({"name": ""}, "name"),
    "port out of range": ({"port": 70000}, "port"),
    "port zero": ({"port": 0}, "port"),
    "port not a number": ({"port": "fifty"}, "port"),
    "host with a space": ({"host": "127.0.0.1 dbname=x"}, "host"),
    "two hosts": ({"host": "a,b"}, "host"),
    "no host": ({"host": ""}, "host"),
    "no database": ({"database": ""}, "database"),
    "database with NUL": ({"database": "site\x00b"}, "database"),
    "no username": ({"username": ""}, "username"),
    "unknown sslmode": ({"sslmode": "sometimes"}, "sslmode"),
    "root certificate not a file": ({"sslrootcert": "/etc"}, "sslrootcert"),
}


@pytest.mark.parametrize("case", BAD)
def test_the_api_refuses_naming_the_field(admin_api, site, case):
    overrides, field = BAD[case]
    data = {"name": "GOOD", **site.link_fields(), **overrides}

    response = admin_api.post("/api/db-links/", data)

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not DatabaseLink.objects.exists()


@pytest.mark.parametrize("case", BAD)
def test_the_page_refuses_naming_the_field(admin_client, site, case):
    overrides, field = BAD[case]
    data = {"name": "GOOD", **site.link_fields(), **overrides}

    response = admin_client.post("/sites/links/add/", data)

    assert response.status_code == 400
    assert field in response.context["form"].errors, response.context["form"].errors
    assert not DatabaseLink.objects.exists()


def test_the_api_refuses_renaming_a_link(admin_api, make_link):
    link = make_link("SITE_B")

    response = admin_api.patch(f"/api/db-links/{link.pk}/", {"name": "OTHER"})

    assert response.status_code == 400 and "name" in response.json()


def test_a_body_that_is_not_an_object_is_a_400(admin_api):
    response = admin_api.post("/api/db-links/", [1, 2], format="json")

    assert response.status_code == 400
