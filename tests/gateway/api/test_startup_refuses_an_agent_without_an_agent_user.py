"""STARTUP fails while no agent user is configured (spec §2.3, §5.2): the API answers 409
naming ``username``, the page says so, the facade raises; nothing is scheduled. With a
username and password (the PostgreSQL role the agent logs in as) the start is scheduled."""

from __future__ import annotations

import pytest

from core.exceptions import Conflict
from gateway import mgwadm
from gateway import services as gw
from gateway.models import Agent


@pytest.fixture
def bare_agent(db) -> Agent:
    return gw.agent_create(user=None, name="BARE")


def test_the_api_page_and_facade_refuse_it_naming_the_agent_user(
    admin_api, admin_client, bare_agent
):
    r = admin_api.post("/api/gateway/agents/BARE/startup/")
    assert r.status_code == 409
    assert "no agent user" in r.json()["username"][0] and "ALTER_AGENT" in r.json()["username"][0]

    r = admin_client.post(f"/gateway/agents/{bare_agent.pk}/start/", follow=True)
    assert "no agent user" in r.content.decode()

    with pytest.raises(Conflict, match="no agent user") as refused:
        mgwadm.startup("bare")
    assert refused.value.field == "username"

    bare_agent.refresh_from_db()
    assert (bare_agent.status, bare_agent.start_token) == ("NOT_STARTED", None)


def test_with_an_agent_user_the_start_is_scheduled(admin_api, bare_agent):
    mgwadm.alter_agent(agent_name="bare", username="mgw_agent", password="pw")
    r = admin_api.post("/api/gateway/agents/BARE/startup/")
    assert r.status_code == 200 and r.json()["status"] == "START_SCHEDULED"
