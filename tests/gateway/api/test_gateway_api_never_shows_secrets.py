"""No API answer carries a password, an encrypted option's value or its Fernet token."""

from __future__ import annotations

import json

from gateway.models import AgentOption
from tests.gateway.helpers import SECRET


def test_no_answer_carries_a_secret(admin_api, default_agent, amqp_link, outbound_job):
    r = admin_api.post(
        "/api/gateway/agents/DEFAULT_AGENT/options/",
        {"name": "oracle.mgw.secret", "value": SECRET, "encrypted": True},
    )
    assert r.json() == [{"name": "oracle.mgw.secret", "value": "<<ENCRYPTED>>", "encrypted": True}]
    token = AgentOption.objects.get().value

    answers = [r.content.decode()]
    for path in (
        "/api/gateway/agents/",
        "/api/gateway/agents/DEFAULT_AGENT/",
        "/api/gateway/agents/DEFAULT_AGENT/options/",
        "/api/gateway/links/",
        "/api/gateway/links/RABBIT/",
        "/api/gateway/jobs/",
        "/api/changelog/",
    ):
        answers.append(admin_api.get(path).content.decode())
    answers.append(
        admin_api.patch("/api/gateway/links/RABBIT/", {"password": SECRET}).content.decode()
    )
    for text in answers:
        assert SECRET not in text and token not in text
        assert amqp_link.password_encrypted not in text
    link = json.loads(answers[-1])
    assert link["has_password"] is True and "password" not in link
