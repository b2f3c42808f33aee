"""Passwords and encrypted options are stored as Fernet tokens; no page shows the value or the
token, only <<ENCRYPTED>>."""

from __future__ import annotations

from gateway import services as gw
from gateway.models import AgentOption
from tests.gateway.helpers import SECRET


def test_no_page_shows_a_secret_or_its_token(
    admin_client, admin_user, default_agent, amqp_link, outbound_job
):
    admin_client.post(
        f"/gateway/agents/{default_agent.pk}/options/",
        {"name": "oracle.mgw.secret", "value": SECRET, "encrypted": "on"},
    )
    gw.agent_option_set(user=admin_user, agent=default_agent, name="plain.opt", value="visible")
    token = AgentOption.objects.get(name="oracle.mgw.secret").value
    assert token and token != SECRET

    for path in (
        "/gateway/",
        "/gateway/agents/",
        f"/gateway/agents/{default_agent.pk}/",
        f"/gateway/links/{amqp_link.pk}/",
        f"/gateway/links/{amqp_link.pk}/edit/",
        "/gateway/links/",
        f"/gateway/jobs/{outbound_job.pk}/",
    ):
        html = admin_client.get(path).content.decode()
        assert SECRET not in html and token not in html, path
        assert amqp_link.password_encrypted not in html, path

    agent_page = admin_client.get(f"/gateway/agents/{default_agent.pk}/").content.decode()
    assert "&lt;&lt;ENCRYPTED&gt;&gt;" in agent_page and "visible" in agent_page
    link_page = admin_client.get(f"/gateway/links/{amqp_link.pk}/").content.decode()
    assert "&lt;&lt;ENCRYPTED&gt;&gt;" in link_page  # the link's password is set
