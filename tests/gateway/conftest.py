"""Gateway fixtures shared by the API and page tests: our queues, an AMQP link to a closed
port, a registered foreign queue and an outbound job."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import services as gw
from gateway.models import Agent, ForeignQueue, Job, Link
from gateway.selectors import console_database_role
from queues import services as qs
from tests.gateway.helpers import CLOSED, SECRET


@pytest.fixture
def default_agent(db) -> Agent:
    """DEFAULT_AGENT with an agent user (STARTUP refuses an agent without one)."""
    username, password = console_database_role()
    return gw.agent_alter(
        user=None, agent=gw.ensure_default_agent(), username=username, password=password
    )


@pytest.fixture
def gw_queues(admin_user) -> dict[str, Any]:
    """ORDERS and AUDIT (single-consumer) and EVENTS (multi-consumer)."""
    sc = qs.queue_table_create(user=admin_user, name="QT_GW_SC", sort_order="enq_time")
    mc = qs.queue_table_create(
        user=admin_user, name="QT_GW_MC", sort_order="enq_time", multiple_consumers=True
    )
    return {
        "orders": qs.queue_create(user=admin_user, name="ORDERS", queue_table=sc),
        "audit": qs.queue_create(user=admin_user, name="AUDIT", queue_table=sc),
        "events": qs.queue_create(user=admin_user, name="EVENTS", queue_table=mc),
    }


@pytest.fixture
def amqp_link(admin_user, default_agent) -> Link:
    return gw.link_create(
        user=admin_user, name="RABBIT", link_type="AMQP", properties=dict(CLOSED), password=SECRET
    )


@pytest.fixture
def foreign_queue(admin_user, amqp_link) -> ForeignQueue:
    return gw.foreign_queue_register(
        user=admin_user, name="OUT_Q", link=amqp_link, provider_queue="mgw.out"
    )


@pytest.fixture
def outbound_job(admin_user, gw_queues, foreign_queue) -> Job:
    return gw.job_create(
        user=admin_user,
        job_name="JOB_OUT",
        propagation_type="OUTBOUND",
        source="ORDERS",
        destination="OUT_Q@RABBIT",
    )
