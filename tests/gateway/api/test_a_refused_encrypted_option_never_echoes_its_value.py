"""An encrypted agent option whose value is refused (not an integer, out of range) gets a 400
naming the option, and the value shows nowhere: not in the API's error, not in the page (nor
in its form input), not in the facade's exception, not in any log line or change-log entry."""

from __future__ import annotations

import logging

import pytest

from core.exceptions import DomainError
from core.models import ChangeLogEntry
from gateway import mgwadm
from gateway.models import AgentOption

NOT_A_NUMBER = "ZQSECRET-not-a-number-7f3a"
OUT_OF_RANGE = "918273645"  # an integer, far above oracle.mgw.batch_size's 100


@pytest.fixture
def everything_logged(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


@pytest.mark.parametrize("secret", [NOT_A_NUMBER, OUT_OF_RANGE])
def test_the_api_page_and_facade_refuse_it_without_quoting_it(
    secret, admin_api, admin_client, default_agent, everything_logged
):
    r = admin_api.post(
        "/api/gateway/agents/DEFAULT_AGENT/options/",
        {"name": "oracle.mgw.batch_size", "value": secret, "encrypted": True},
        format="json",
    )
    assert r.status_code == 400
    assert "oracle.mgw.batch_size" in str(r.json())
    assert secret not in r.content.decode()

    page = admin_client.post(
        f"/gateway/agents/{default_agent.pk}/options/",
        {"name": "oracle.mgw.batch_size", "value": secret, "encrypted": "on"},
    )
    assert page.status_code == 400
    html = page.content.decode()
    assert "oracle.mgw.batch_size" in html
    assert secret not in html

    with pytest.raises(DomainError) as refused:
        mgwadm.set_option(
            mgwadm.AGENT_JAVA_PROP, "DEFAULT_AGENT", "oracle.mgw.batch_size", secret, True
        )
    assert "oracle.mgw.batch_size" in str(refused.value)
    assert secret not in str(refused.value)

    assert not AgentOption.objects.exists()
    assert secret not in everything_logged.text
    assert not any(secret in str(e.__dict__) for e in ChangeLogEntry.objects.all())


def test_a_plain_option_still_says_what_was_wrong(admin_api, default_agent):
    r = admin_api.post(
        "/api/gateway/agents/DEFAULT_AGENT/options/",
        {"name": "oracle.mgw.batch_size", "value": "lots"},
        format="json",
    )
    assert r.status_code == 400 and "'lots'" in r.content.decode()
