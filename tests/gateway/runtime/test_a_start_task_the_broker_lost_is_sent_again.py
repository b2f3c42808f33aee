"""A STARTUP whose start task the broker lost (a Redis restarted without persistence) does not
leave the agent START_SCHEDULED for good: START_RESEND_S later the reaper sends a start with a
new token, a worker takes it, and the lost task, were it to arrive after all, is stale."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from gateway import agent as agent_process
from gateway import services as gw
from gateway.models import Agent
from gateway.selectors import console_database_role
from tests.gateway.runtime.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_a_lost_start_is_sent_again_with_a_new_token(gateway):
    import redis

    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    username, password = console_database_role()
    gw.agent_alter(user=None, agent=gateway.agent(), username=username, password=password)
    agent = gw.agent_startup(user=None, agent=gateway.agent())
    first = agent.start_token
    assert agent.status == "START_SCHEDULED" and agent.restart_at is not None
    assert broker.llen(agent.celery_queue) == 1
    assert gw.agents_reap()["restarted"] == 0  # not before START_RESEND_S

    broker.delete(agent.celery_queue)  # the broker restarted and forgot it
    Agent.objects.filter(pk=agent.pk).update(restart_at=timezone.now() - timedelta(seconds=1))
    assert gw.agents_reap()["restarted"] == 1
    agent.refresh_from_db()
    assert agent.status == "START_SCHEDULED" and agent.start_token != first
    assert broker.llen(agent.celery_queue) == 1

    gateway.worker("w").wait_registered()
    assert wait_for(lambda: gateway.agent().status == "RUNNING", 30), gateway.agent().__dict__
    # The first start's task, delivered late, finds its token superseded.
    assert agent_process.run(agent.pk, str(first)) == "stale"
    assert gateway.agent().status == "RUNNING"
    broker.close()
