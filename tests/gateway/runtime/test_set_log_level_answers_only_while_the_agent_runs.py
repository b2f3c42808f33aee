"""SET_LOG_LEVEL (§2.3) answers only while the agent runs: before STARTUP and after SHUTDOWN it
is a 409 naming the status (API) or a DomainError (facade). While RUNNING it takes Oracle's
names or the numbers, through the API, the page and the facade; the agent applies the level at
its next beat and says so in its log."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from core.exceptions import Conflict
from gateway import mgwadm
from gateway.models import AgentLogLine
from tests.gateway.runtime.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_set_log_level_by_name_or_number_only_while_running(gateway, admin_user, client):
    api = APIClient()
    api.force_authenticate(admin_user)
    client.force_login(admin_user)
    url = "/api/gateway/agents/DEFAULT_AGENT/set-log-level/"

    r = api.post(url, {"log_level": "TRACE_HIGH_LOGGING"}, format="json")
    assert r.status_code == 409 and "NOT_STARTED" in r.json()["status"][0]
    with pytest.raises(Conflict):
        mgwadm.set_log_level(mgwadm.TRACE_LITE_LOGGING)

    gateway.worker("w").wait_registered()
    gateway.start()
    r = api.post(url, {"log_level": "TRACE_HIGH_LOGGING"}, format="json")
    assert r.status_code == 200, r.content
    assert (r.json()["log_level"], r.json()["log_level_name"]) == (2, "TRACE_HIGH_LOGGING")
    assert wait_for(
        lambda: AgentLogLine.objects.filter(text="log level TRACE_HIGH_LOGGING").exists(), 10
    )

    r = api.post(url, {"log_level": 3}, format="json")
    assert r.json()["log_level_name"] == "TRACE_DEBUG_LOGGING"
    for wrong in ("LIGHT_LOGGING", "trace_lite_logging", "1", True, 5):
        r = api.post(url, {"log_level": wrong}, format="json")
        assert r.status_code == 400, wrong
        assert "TRACE_DEBUG_HIGH_LOGGING (4)" in r.json()["log_level"][0]

    agent = mgwadm.set_log_level("DEFAULT_AGENT", "TRACE_DEBUG_HIGH_LOGGING")
    assert agent.log_level == 4
    agent = mgwadm.set_log_level(mgwadm.BASIC_LOGGING)  # the default agent's overload
    assert agent.log_level == 0

    page = client.get(f"/gateway/agents/{agent.pk}/").content.decode()
    assert "Set log level</button>" in page and ">TRACE_LITE_LOGGING</option>" in page
    r = client.post(f"/gateway/agents/{agent.pk}/log-level/", {"log_level": 1})
    assert r.status_code == 302
    assert wait_for(
        lambda: AgentLogLine.objects.filter(text="log level TRACE_LITE_LOGGING").exists(), 10
    )

    gateway.stop()
    r = api.post(url, {"log_level": 0}, format="json")
    assert r.status_code == 409
    assert gateway.agent().log_level == 1  # kept: the next start's level, as mgw.ora's
