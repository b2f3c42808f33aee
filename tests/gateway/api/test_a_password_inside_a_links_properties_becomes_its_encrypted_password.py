"""A link's password given inside ``properties`` (DBMS_MGWADM's spelling: the password is an
attribute of SYS.MGW_MQSERIES_PROPERTIES) is never dropped: through the API, the facade and the
page form it becomes the link's password, stored encrypted and never in the properties. Two
different passwords, one in ``password`` and one in ``properties``, are a 400 naming
``properties.password``, and nothing is written."""

from __future__ import annotations

import pytest

from core import crypto
from core.exceptions import DomainError
from gateway import mgwadm
from gateway.models import Link

CLOSED = {"host": "127.0.0.1", "port": 1}  # nothing listens there; nothing connects anyway


def _password(name: str) -> str:
    return crypto.decrypt(Link.objects.get(name=name).password_encrypted)


def test_the_api_takes_it_on_create_and_alter_and_refuses_two_different_ones(
    admin_api, default_agent
):
    r = admin_api.post(
        "/api/gateway/links/",
        {
            "linkname": "R1",
            "link_type": "AMQP",
            "properties": {**CLOSED, "password": "in-props-1"},
        },
        format="json",
    )
    assert r.status_code == 201, r.content
    assert "in-props-1" not in r.content.decode() and r.json()["has_password"] is True
    assert "password" not in Link.objects.get(name="R1").properties
    assert _password("R1") == "in-props-1"

    r = admin_api.patch(
        "/api/gateway/links/R1/", {"properties": {"password": "in-props-2"}}, format="json"
    )
    assert r.status_code == 200, r.content
    assert _password("R1") == "in-props-2"

    r = admin_api.post(
        "/api/gateway/links/",
        {
            "linkname": "R2",
            "link_type": "AMQP",
            "properties": {**CLOSED, "password": "one"},
            "password": "another",
        },
        format="json",
    )
    assert r.status_code == 400 and "properties.password" in r.json(), r.content
    assert "one" not in str(r.json()) and "another" not in str(r.json())
    assert not Link.objects.filter(name="R2").exists()

    r = admin_api.patch(
        "/api/gateway/links/R1/",
        {"properties": {"password": "x1"}, "password": "x2"},
        format="json",
    )
    assert r.status_code == 400 and "properties.password" in r.json()
    assert _password("R1") == "in-props-2"


def test_the_facade_takes_it_on_create_and_alter(db):
    mgwadm.create_msgsystem_link(
        linkname="f1", properties={"link_type": "AMQP", **CLOSED, "password": "fp-1"}
    )
    assert _password("F1") == "fp-1" and "password" not in Link.objects.get(name="F1").properties
    mgwadm.alter_msgsystem_link("f1", properties={"password": "fp-2"})
    assert _password("F1") == "fp-2"
    mgwadm.alter_msgsystem_link("f1", properties={"password": mgwadm.NO_CHANGE, "heartbeat": 20})
    assert _password("F1") == "fp-2"


def test_the_form_hears_a_posted_properties_password(admin_client, default_agent):
    fields = {
        "agent": default_agent.pk,
        "properties.host": "127.0.0.1",
        "properties.port": "1",
        "properties.tls": "FALSE",
        "properties.tls_verify": "TRUE",
        "max_connections": 1,
    }
    r = admin_client.post(
        "/gateway/links/add/?link_type=AMQP",
        {**fields, "linkname": "p1", "properties.password": "form-props"},
    )
    assert r.status_code == 302, r.content.decode()[-2000:]
    assert _password("P1") == "form-props"

    r = admin_client.post(
        "/gateway/links/add/?link_type=AMQP",
        {**fields, "linkname": "p2", "properties.password": "a1", "password": "b2"},
    )
    assert r.status_code == 400
    assert "Two different passwords" in r.content.decode()
    assert not Link.objects.filter(name="P2").exists()


def test_a_password_that_is_not_text_is_refused_naming_it(admin_api, default_agent):
    r = admin_api.post(
        "/api/gateway/links/",
        {"linkname": "R3", "link_type": "AMQP", "properties": {**CLOSED, "password": 5}},
        format="json",
    )
    assert r.status_code == 400 and "properties.password" in r.json()
    with pytest.raises(DomainError) as refused:
        mgwadm.create_msgsystem_link(
            linkname="f3", properties={"link_type": "AMQP", **CLOSED, "password": ["x"]}
        )
    assert refused.value.field == "properties.password"
