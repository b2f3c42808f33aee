"""A killed agent worker is MGW's restartable failure: the agent goes START_SCHEDULED and its
start runs again on a worker that serves its queue (spec §1.6.5)."""

from __future__ import annotations

import signal

import pytest

from gateway import selectors
from gateway.models import AgentLogLine
from tests.gateway.runtime.conftest import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_killing_the_worker_schedules_the_start_again_and_another_worker_runs_it(gateway):
    first = gateway.worker("first")
    first.wait_registered()
    gateway.start()
    first.kill(signal.SIGKILL)
    agent = wait_for(lambda: (a := gateway.agent()).status == "START_SCHEDULED" and a, 20)
    assert agent, gateway.agent().status
    assert "ended unexpectedly" in agent.last_error_msg
    assert selectors.agent_ping(agent) is None
    assert AgentLogLine.objects.filter(agent=agent, component="reaper").exists()

    second = gateway.worker("second")
    second.wait_registered()
    assert wait_for(lambda: gateway.agent().status == "RUNNING", 30)
    agent = gateway.agent()
    assert agent.instance.startswith("second@")
    assert selectors.agent_ping(agent) == "REACHABLE"


def test_an_agent_dying_while_shutting_down_ends_stopped(gateway):
    from gateway import services as gw

    w = gateway.worker("w")
    w.wait_registered()
    gateway.start()
    # The shutdown request and the kill race: either way the agent must end NOT_STARTED.
    gw.agent_shutdown(user=None, agent=gateway.agent())
    w.kill(signal.SIGKILL)
    assert wait_for(lambda: gateway.agent().status == "NOT_STARTED", 20)
