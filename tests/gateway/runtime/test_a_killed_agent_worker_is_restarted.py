"""A killed agent worker is MGW's restartable failure: the agent goes START_SCHEDULED and its
start runs again on a worker that serves its queue (spec §1.6.5)."""

from __future__ import annotations

import signal

import pytest

from gateway import selectors
from gateway.models import AgentLogLine
from tests.gateway.runtime.helpers import wait_for

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


def test_an_inbound_job_killed_mid_stream_enqueues_every_message_once(gateway, foreign):
    """Messages enqueued but not yet acknowledged when the worker dies come back from RabbitMQ;
    the receive log recognises their message ids."""
    import json

    import pika

    from gateway import services as gw
    from queues import services as qs
    from tests.gateway.runtime.helpers import drain

    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    dst = qs.queue_create(user=None, name="DST", queue_table=table)
    link = gateway.link("AMQP")
    bus = foreign("AMQP")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=bus)
    gw.job_create(
        user=None,
        job_name="J",
        propagation_type="INBOUND",
        source=f"BUS@{link.name}",
        destination="DST",
        options={"MsgBatchSize": "2"},  # small batches: the kill lands mid-stream
    )
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    ch = conn.channel()
    for i in range(3000):
        ch.basic_publish(
            "",
            bus,
            json.dumps({"n": i}).encode(),
            pika.BasicProperties(
                delivery_mode=2, message_id=f"m-{i}", content_type="application/json"
            ),
        )
    conn.close()
    first = gateway.worker("first")
    first.wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").propagated_msgs >= 300, 30)
    first.kill(signal.SIGKILL)
    assert dst.messages.count() < 3000  # the kill interrupted the stream
    assert wait_for(lambda: gateway.agent().status == "START_SCHEDULED", 20)
    gateway.worker("second").wait_registered()
    assert wait_for(lambda: dst.messages.count() >= 3000, 90), dst.messages.count()
    gateway.stop()
    got = [m.payload["n"] for m in drain(dst)]
    assert len(got) == 3000 and sorted(got) == list(range(3000))
