"""Table C-3: a link's host name and port are not alterable. ALTER_MSGSYSTEM_LINK through the
API, the facade and the edit page refuses another host or port with a 400 naming the property
and saying to create a new link; the same values given again (as the edit form sends them) are
fine, and the refused call writes nothing."""

from __future__ import annotations

import pytest

from core.exceptions import DomainError
from gateway import mgwadm
from gateway.models import Link


@pytest.mark.parametrize(
    "change, field", [({"host": "10.0.0.9"}, "host"), ({"port": 5673}, "port")]
)
def test_the_api_refuses_another_host_or_port(admin_api, amqp_link, change, field):
    r = admin_api.patch(
        "/api/gateway/links/RABBIT/",
        {"properties": {**change, "virtual_host": "/x"}, "max_connections": 4},
        format="json",
    )
    assert r.status_code == 400, r.content
    message = " ".join(r.json()[f"properties.{field}"])
    assert "cannot be altered" in message and "create a new link" in message
    link = Link.objects.get(name="RABBIT")
    assert (link.properties["host"], link.properties["port"]) == ("127.0.0.1", 1)
    assert link.properties["virtual_host"] == "/" and link.max_connections == 1


def test_the_same_host_and_port_again_are_not_a_change(admin_api, amqp_link):
    r = admin_api.patch(
        "/api/gateway/links/RABBIT/",
        {"properties": {"host": "127.0.0.1", "port": "1", "virtual_host": "/x"}},
        format="json",
    )
    assert r.status_code == 200, r.content
    assert Link.objects.get(name="RABBIT").properties["virtual_host"] == "/x"


def test_the_facade_refuses_them(amqp_link):
    with pytest.raises(DomainError) as refused:
        mgwadm.alter_msgsystem_link("rabbit", properties={"host": "h2"})
    assert refused.value.field == "properties.host"
    assert "create a new link" in str(refused.value)
    with pytest.raises(DomainError) as refused:
        mgwadm.alter_msgsystem_link("rabbit", properties={"port": 2})
    assert refused.value.field == "properties.port"


def test_the_edit_page_refuses_them(admin_client, amqp_link):
    form = admin_client.get(f"/gateway/links/{amqp_link.pk}/edit/").content.decode()
    assert form.count("Fixed (Table C-3): another server is a new link.") == 2
    r = admin_client.post(
        f"/gateway/links/{amqp_link.pk}/edit/",
        {
            "properties.host": "127.0.0.2",
            "properties.port": "1",
            "properties.tls": "FALSE",
            "properties.tls_verify": "TRUE",
            "max_connections": 1,
        },
    )
    assert r.status_code == 400
    assert "create a new link" in r.content.decode()
    assert Link.objects.get(name="RABBIT").properties["host"] == "127.0.0.1"
