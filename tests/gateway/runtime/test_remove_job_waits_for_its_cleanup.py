"""REMOVE_JOB (spec §1.9.5): the job goes DELETE_PENDING until its agent has removed what the
job holds in the foreign system (here an inbound job's durable subscription); with the agent
stopped it waits for the next start; FORCE removes it at once."""

from __future__ import annotations

import pika
import pytest

from core.exceptions import Conflict
from gateway import services as gw
from gateway.models import Job
from queues import services as qs
from tests.gateway.runtime.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def _queue_exists(name: str) -> bool:
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    try:
        conn.channel().queue_declare(name, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker:
        return False
    finally:
        if conn.is_open:
            conn.close()


@pytest.fixture
def topic_job(gateway):
    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    qs.queue_create(user=None, name="DST", queue_table=table)
    link = gateway.link("AMQP")
    gw.foreign_queue_register(
        user=None, name="EVENTS", link=link, provider_queue="amq.topic", domain="TOPIC"
    )
    return gw.job_create(
        user=None,
        job_name="J",
        propagation_type="INBOUND",
        source=f"EVENTS@{link.name}",
        destination="DST",
    )


def test_with_the_agent_stopped_the_job_waits_delete_pending_then_goes(gateway, topic_job):
    gateway.worker("w").wait_registered()
    gateway.start()
    subscription = f"mgw.{topic_job.key}"
    assert wait_for(lambda: _queue_exists(subscription), 20)
    gateway.stop()

    job = gw.job_remove(user=None, job=gateway.job("J"))
    assert job.status == "DELETE_PENDING"
    for verb in (gw.job_enable, gw.job_disable, gw.job_reset):
        with pytest.raises(Conflict, match="DELETE_PENDING"):
            verb(user=None, job=gateway.job("J"))
    with pytest.raises(Conflict, match="DELETE_PENDING"):
        gw.job_alter(user=None, job=gateway.job("J"), comments="x")
    assert _queue_exists(subscription)  # nothing was cleaned: no agent

    gateway.start()
    assert wait_for(lambda: not Job.objects.filter(name="J").exists(), 20)
    assert not _queue_exists(subscription)


def test_force_removes_at_once_and_leaves_the_subscription(gateway, topic_job):
    gateway.worker("w").wait_registered()
    gateway.start()
    subscription = f"mgw.{topic_job.key}"
    assert wait_for(lambda: _queue_exists(subscription), 20)
    gateway.stop()
    assert gw.job_remove(user=None, job=gateway.job("J"), force=True) is None
    assert not Job.objects.filter(name="J").exists()
    assert _queue_exists(subscription)  # MGW's drawback of FORCE: the subscription stays
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    conn.channel().queue_delete(subscription)
    conn.close()
