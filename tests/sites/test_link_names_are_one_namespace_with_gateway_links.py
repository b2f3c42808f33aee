"""QUEUE@NAME must name one link: a database link may not take a gateway link's name, nor a
gateway link a database link's, whatever the case it is typed in."""

from __future__ import annotations

from gateway import services as gw
from gateway.models import Link
from sites.models import DatabaseLink


def test_a_database_link_cannot_take_a_gateway_links_name(admin_api, admin_user, site):
    gw.link_create(
        user=admin_user,
        name="SHARED",
        link_type="AMQP",
        properties={"host": "127.0.0.1", "port": 5672},
    )

    response = admin_api.post("/api/db-links/", {"name": "shared", **site.link_fields()})

    assert response.status_code == 409
    assert "messaging gateway link" in response.json()["name"][0]
    assert not DatabaseLink.objects.exists()


def test_a_gateway_link_cannot_take_a_database_links_name(admin_api, make_link):
    make_link("SHARED")

    response = admin_api.post(
        "/api/gateway/links/",
        {"linkname": "Shared", "link_type": "AMQP", "properties": {"host": "127.0.0.1"}},
    )

    assert response.status_code == 409
    assert "database link" in response.json()["linkname"][0]
    assert not Link.objects.filter(name="SHARED").exists()


def test_a_second_link_of_the_same_name_is_a_conflict(admin_api, make_link, site):
    make_link("SITE_B")

    response = admin_api.post("/api/db-links/", {"name": "site_b", **site.link_fields()})

    assert response.status_code == 409
    assert "already exists" in response.json()["name"][0]
