"""Exactly-once outbound with a foreign log (spec §1.11): the batch and the job's log record are
committed together in the foreign system (AMQP channel transaction), our dequeue and our log
record together in PostgreSQL. A batch whose foreign record exists without ours was sent before
a crash: the agent consumes it instead of sending it again. The two problems MGW names — a
missing source message [415] and a missing record in the outbound log queue [417] ([416] is
the inbound one) — stop the job until the matching CLEANUP_GATEWAY action."""

from __future__ import annotations

import json
import signal
import uuid

import pika
import pytest

from gateway import services as gw
from gateway.drivers import link_driver
from gateway.drivers.base import Destination
from gateway.models import SendLog
from queues import engine
from queues import services as qs
from tests.gateway.runtime.helpers import drain, wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def _bus_bodies(queue: str) -> list[int]:
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    ch = conn.channel()
    out = []
    while True:
        method, _, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            break
        out.append(json.loads(body)["n"])
    conn.close()
    return out


@pytest.fixture
def setup(gateway, foreign):
    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    src = qs.queue_create(user=None, name="SRC", queue_table=table)
    log_queue = foreign("AMQP", "mgwlog")
    bus = foreign("AMQP")
    link = gateway.link("AMQP", outbound_log_queue=log_queue)
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=bus)
    job = gw.job_create(
        user=None,
        job_name="J",
        propagation_type="OUTBOUND",
        source="SRC",
        destination=f"BUS@{link.name}",
    )
    return src, link, job, bus, log_queue


def _enqueue(src, n: int, start: int = 0) -> list[int]:
    return qs.message_enqueue(
        user=None,
        queue=src,
        messages=[engine.NewMessage(payload={"n": i}) for i in range(start, start + n)],
    )


def _send_like_a_crashed_agent(link, job, bus: str, ids: list[int], numbers: list[int]) -> None:
    """What an agent does before it dies between the foreign commit and ours."""
    from gateway.conversion import body_of
    from gateway.drivers.base import GatewayMessage

    driver = link_driver(link)
    driver.publish(
        Destination(bus, "QUEUE"),
        [
            GatewayMessage(body=body_of({"n": n})[0], content_type="application/json")
            for n in numbers
        ],
        dedupe_ids=[f"{job.uid}:{i}" for i in ids],
        log_record={"job": job.key, "batch": str(uuid.uuid4()), "ids": ids},
    )
    driver.close()


def test_a_batch_sent_before_a_crash_is_consumed_not_sent_again(gateway, setup):
    src, link, job, bus, _ = setup
    ids = _enqueue(src, 10)
    _send_like_a_crashed_agent(link, job, bus, ids[:4], [0, 1, 2, 3])
    gateway.worker("w").wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 10, 20), gateway.job("J").__dict__
    assert sorted(_bus_bodies(bus)) == list(range(10))  # 0-3 once, from the interrupted batch
    assert drain(src) == []
    assert SendLog.objects.filter(job=job).exists()


def test_a_missing_source_message_stops_the_job_until_reset_sub_missing_message(gateway, setup):
    src, link, job, bus, _ = setup
    ids = _enqueue(src, 5)
    _send_like_a_crashed_agent(link, job, bus, [ids[0], 999_999_999], [0, 42])
    gateway.worker("w").wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").status == "FAILED", 20)
    j = gateway.job("J")
    assert j.recovery == "MISSING_MESSAGE" and j.last_error_msg.startswith("[415]")
    # RESET_JOB does not clear a recovery problem; the cleanup action does.
    gw.agent_cleanup(user=None, agent=gateway.agent(), action="RESET_SUB_MISSING_MESSAGE", sarg="J")
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 5, 20), gateway.job("J").__dict__
    assert gateway.job("J").recovery == ""
    assert sorted(_bus_bodies(bus)) == [0, 1, 2, 3, 4, 42]  # message 0 was not sent twice


def test_a_purged_log_queue_stops_the_job_until_reset_sub_missing_log_rec(gateway, setup):
    src, _link, _job, bus, log_queue = setup
    _enqueue(src, 3)
    gateway.worker("w").wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 3, 20)
    gateway.stop()
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    conn.channel().queue_purge(log_queue)
    conn.close()
    _enqueue(src, 3, start=3)
    gateway.start()
    assert wait_for(lambda: gateway.job("J").status == "FAILED", 20)
    job = gateway.job("J")
    assert job.recovery == "MISSING_LOG_RECORD" and job.last_error_msg.startswith("[417] ")
    from gateway.models import AgentLogLine

    # The agent flushes its log at its next poll.
    assert wait_for(lambda: AgentLogLine.objects.filter(code="417", severity="ERROR").exists(), 10)
    assert not AgentLogLine.objects.filter(code="416").exists()
    from core.exceptions import Conflict

    with pytest.raises(Conflict, match="missing source message"):
        gw.agent_cleanup(
            user=None, agent=gateway.agent(), action="RESET_SUB_MISSING_MESSAGE", sarg="J"
        )
    gw.agent_cleanup(user=None, agent=gateway.agent(), action="RESET_SUB_MISSING_LOG_REC", sarg="J")
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 3, 20)  # counters restart
    assert sorted(_bus_bodies(bus)) == list(range(6))


def test_a_killed_agent_worker_loses_and_duplicates_nothing(gateway, setup):
    src, _link, _job, bus, _ = setup
    _enqueue(src, 3000)
    first = gateway.worker("first")
    first.wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").propagated_msgs >= 300, 30)
    first.kill(signal.SIGKILL)
    assert wait_for(lambda: gateway.agent().status == "START_SCHEDULED", 20)
    gateway.worker("second").wait_registered()
    assert wait_for(lambda: gateway.agent().status == "RUNNING", 30)
    assert wait_for(lambda: not drain_peek(src), 60)
    got = _bus_bodies(bus)
    assert len(got) == 3000 and sorted(got) == list(range(3000))


def drain_peek(src) -> bool:
    from gateway.models import Job

    return Job.objects.filter(source_queue=src).exists() and src.messages.exists()
