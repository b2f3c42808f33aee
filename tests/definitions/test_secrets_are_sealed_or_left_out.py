"""Secrets (database link, gateway link and agent passwords, encrypted agent options) leave the
console only sealed with its key, or not at all (``secrets=omit``)."""

from __future__ import annotations

import json

import pytest

from core import crypto
from definitions.selectors import definitions_export
from definitions.services import definitions_import
from gateway import services as gateway_services
from gateway.models import Agent
from sites.models import DatabaseLink

pytestmark = pytest.mark.django_db

PASSWORD = "not-needed-with-trust"  # the demo document's database link password


def test_secrets_are_exported_sealed_and_open_only_with_this_key(demo_document, settings):
    agent = Agent.objects.get(name="DEFAULT_AGENT")
    gateway_services.agent_option_set(
        user=None, agent=agent, name="token", value="opt-secret", encrypted=True
    )
    doc = definitions_export()
    text = json.dumps(doc)

    assert PASSWORD not in text and "opt-secret" not in text
    (link,) = doc["database_links"]
    assert crypto.export_decrypt(link["password"]["encrypted"]) == PASSWORD
    (option,) = doc["gateway_agents"][0]["options"]
    assert option["encrypted"] is True and set(option["value"]) == {"encrypted"}
    assert definitions_export() == doc  # sealed deterministically: the same every time

    settings.SECRET_KEY = "another console's key"
    with pytest.raises(Exception) as refused:
        definitions_import(user=None, document=doc, dry_run=True)
    assert refused.value.field == "database_links[0].password"


def test_secrets_omit_leaves_them_out_and_an_import_keeps_the_stored_ones(
    demo_document, admin_api, monitor_api
):
    agent = Agent.objects.get(name="DEFAULT_AGENT")
    gateway_services.agent_option_set(
        user=None, agent=agent, name="token", value="opt-secret", encrypted=True
    )
    r = admin_api.get("/api/definitions/?secrets=omit")

    assert r.status_code == 200
    doc = r.json()
    assert doc["secrets"] == "omitted"
    assert '"password"' not in json.dumps(doc)
    assert all("password" not in a for a in doc["gateway_agents"])
    assert doc["gateway_agents"][0]["options"] == [{"name": "token", "encrypted": True}]
    # Nothing in it differs from the topology: importing it changes nothing, passwords stay.
    r = admin_api.post("/api/definitions/", doc, format="json")
    assert r.json()["summary"] == {"create": 0, "change": 0, "delete": 0}
    link = DatabaseLink.objects.get(name="SELF_SITE")
    assert crypto.decrypt(link.password_encrypted) == PASSWORD
    assert gateway_services.agent_option_values(agent)["token"] == "opt-secret"
    assert admin_api.get("/api/definitions/?secrets=plain").json() == {
        "secrets": ["secrets is encrypted or omit."]
    }
    r = admin_api.get("/api/definitions/?secrets=omit&download=1")
    assert r["Content-Disposition"] == 'attachment; filename="definitions.json"'
    # Sealed or not, the document is for administrators only.
    assert monitor_api.get("/api/definitions/?secrets=omit").status_code == 403
    assert monitor_api.post("/api/definitions/?dry_run=1", doc, format="json").status_code == 403
