"""STARTUP/SHUTDOWN walk MGW's agent states (spec §1.6.6) on a real Celery worker."""

from __future__ import annotations

import pytest

from gateway import selectors
from gateway import services as gw
from gateway.models import AgentLogLine
from tests.gateway.runtime.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_without_a_worker_the_start_stays_scheduled_and_says_why(gateway):
    agent = gw.agent_startup(user=None, agent=gateway.agent())
    assert agent.status == "START_SCHEDULED"
    assert selectors.agent_ping(agent) is None
    notes = selectors.agent_diagnostics(agent)
    assert any("mgw.DEFAULT_AGENT" in n for n in notes)
    gw.agent_shutdown(user=None, agent=agent)
    assert gateway.agent().status == "NOT_STARTED"


def test_a_started_agent_runs_answers_pings_and_stops(gateway):
    worker = gateway.worker("w1")
    worker.wait_registered()
    agent = gateway.start()
    assert agent.instance.startswith("w1@")
    assert selectors.agent_ping(agent) == "REACHABLE"
    assert agent.heartbeat_at is not None and agent.start_time is not None
    gateway.stop()
    agent = gateway.agent()
    assert agent.status == "NOT_STARTED"
    assert agent.instance == "" and selectors.agent_ping(agent) is None
    texts = list(AgentLogLine.objects.filter(agent=agent).values_list("text", flat=True))
    assert any("agent running" in t for t in texts)
    assert any("agent stopped (shutdown)" in t for t in texts)


def test_a_second_start_while_running_is_refused(gateway):
    gateway.worker("w1").wait_registered()
    gateway.start()
    from core.exceptions import Conflict

    with pytest.raises(Conflict, match="already RUNNING"):
        gw.agent_startup(user=None, agent=gateway.agent())


def test_another_live_agent_process_makes_the_start_broken_until_cleanup(gateway):
    """Another process holding the agent's lock (MGW: a second agent process) → BROKEN;
    CLEAN_STARTUP_STATE then clears it once that process is gone."""
    import psycopg

    from gateway.config import LOCK_NS
    from queues.services import conninfo

    gateway.worker("w1").wait_registered()
    agent = gateway.agent()
    other = psycopg.connect(conninfo(), autocommit=True)
    try:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_NS, agent.pk))
        gw.agent_startup(user=None, agent=agent)
        assert wait_for(lambda: gateway.agent().status == "BROKEN", 20, reap=False)
        assert "another agent process" in gateway.agent().last_error_msg
        from core.exceptions import Conflict

        with pytest.raises(Conflict, match="BROKEN"):
            gw.agent_startup(user=None, agent=gateway.agent())
    finally:
        other.close()
    gw.agent_cleanup(user=None, agent=gateway.agent(), action="CLEAN_STARTUP_STATE")
    assert gateway.agent().status == "NOT_STARTED"
    gateway.start()
