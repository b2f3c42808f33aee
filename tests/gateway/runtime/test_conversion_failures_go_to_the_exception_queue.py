"""A message that cannot be converted goes to the job's exception queue at the first failure,
with the reason, and the job goes on (spec §1.10); without an exception queue it is a failure of
the job, which retries and ends FAILED after MGW's 16 failures. Each failure carries MGW's code
(§4.5): [722] a transformation failed, [720] the foreign system cannot carry the message, [724]
a foreign message does not fit our queue; never [434], which is a queue that cannot be
reached."""

from __future__ import annotations

from datetime import timedelta

import pika
import pytest
from django.utils import timezone

from gateway import services as gw
from gateway.models import AgentLogLine
from monitoring.selectors import rates_get
from monitoring.services import rates_sample
from queues import engine
from queues import services as qs
from tests.gateway.runtime.helpers import drain, wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def _amqp_get_all(queue: str) -> list[tuple[pika.BasicProperties, bytes]]:
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    ch = conn.channel()
    out = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            break
        out.append((props, body))
    conn.close()
    return out


def _amqp_put(queue: str, body: bytes, **props) -> None:
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
    conn.channel().basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2, **props))
    conn.close()


@pytest.fixture
def queues_():
    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    return {n: qs.queue_create(user=None, name=n, queue_table=table) for n in ("SRC", "DST", "EXC")}


def test_outbound_failures_go_to_our_exception_queue_and_the_rest_goes_on(
    gateway, foreign, queues_
):
    link = gateway.link("AMQP")
    bus = foreign("AMQP")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=bus)
    gw.job_create(
        user=None,
        job_name="J",
        propagation_type="OUTBOUND",
        source="SRC",
        destination=f"BUS@{link.name}",
        transformation="MGW_REJECT_POISON",
        exception_queue="EXC",
    )
    messages = [engine.NewMessage(payload={"n": i, "poison": i % 4 == 0}) for i in range(12)]
    # A header AMQP cannot carry as a scalar: the driver refuses that message alone.
    messages.append(engine.NewMessage(payload={"n": 99}, headers={"nested": {"a": 1}}))
    qs.message_enqueue(user=None, queue=queues_["SRC"], messages=messages)
    t0 = timezone.now()
    rates_sample(at=t0)  # the sampler's pass before the agent runs: 13 waiting
    gateway.worker("w").wait_registered()
    gateway.start()
    assert wait_for(
        lambda: gateway.job("J").propagated_msgs + gateway.job("J").exceptionq_msgs >= 13, 30
    )
    job = gateway.job("J")
    assert (job.propagated_msgs, job.exceptionq_msgs, job.failures, job.status) == (
        9,
        4,
        0,
        "READY",
    )
    # The job's rate series follow the agent's counters: in = taken from the source (sent or
    # moved to the exception queue), out = sent; its source's backlog for it is gone.
    rates_sample(at=t0 + timedelta(seconds=10))
    rates = rates_get(kind="gateway_job", object_id=job.pk, range_="10m", now=t0)
    assert rates["series"] == {"in_rate": [13 / 10], "out_rate": [9 / 10], "backlog": [0]}
    sent = sorted(__import__("json").loads(b)["n"] for _, b in _amqp_get_all(bus))
    assert sent == [i for i in range(12) if i % 4]
    exc = drain(queues_["EXC"])
    reasons = {m.payload["n"]: m.headers["mgw_exception_reason"] for m in exc}
    assert set(reasons) == {0, 4, 8, 99}
    assert "poison" in reasons[0] and "nested" in reasons[99]
    codes = {m.payload["n"]: m.headers["mgw_exception_code"] for m in exc}
    assert codes == {0: "722", 4: "722", 8: "722", 99: "720"}
    assert all(m.headers["mgw_job"] == "J" for m in exc)
    logged = _conversion_codes(4)
    assert logged == ["720", "722", "722", "722"], logged
    assert drain(queues_["SRC"]) == []


def test_without_an_exception_queue_a_failure_retries_then_fails_and_reset_recovers(
    gateway, foreign, queues_
):
    link = gateway.link("AMQP")
    bus = foreign("AMQP")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=bus)
    job = gw.job_create(
        user=None,
        job_name="J",
        propagation_type="OUTBOUND",
        source="SRC",
        destination=f"BUS@{link.name}",
        transformation="MGW_REJECT_POISON",
    )
    qs.message_enqueue(
        user=None,
        queue=queues_["SRC"],
        messages=[engine.NewMessage(payload={"n": i, "poison": i == 2}) for i in range(5)],
    )
    gateway.worker("w").wait_registered()
    gateway.start()
    # MGW: FAILURES counts each error, back-off between attempts, FAILED at 16.
    assert wait_for(lambda: gateway.job("J").status == "FAILED", 30), gateway.job("J").status
    job = gateway.job("J")
    assert job.failures == 16 and "no exception queue" in job.last_error_msg
    assert job.last_error_msg.startswith("[722] ")
    assert job.last_error_at is not None and job.propagated_msgs == 0
    assert _amqp_get_all(bus) == []  # nothing of the failing batch left
    # Give it an exception queue and reset: everything goes where it belongs, once.
    gw.job_alter(user=None, job=job, exception_queue="EXC")
    gw.job_reset(user=None, job=gateway.job("J"))
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 4, 20)
    job = gateway.job("J")
    assert (job.status, job.failures, job.exceptionq_msgs) == ("READY", 0, 1)
    assert sorted(__import__("json").loads(b)["n"] for _, b in _amqp_get_all(bus)) == [0, 1, 3, 4]
    assert [m.payload["n"] for m in drain(queues_["EXC"])] == [2]


def test_inbound_messages_we_cannot_read_go_to_the_foreign_exception_queue(
    gateway, foreign, queues_
):
    link = gateway.link("AMQP")
    bus, bad = foreign("AMQP"), foreign("AMQP")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=bus)
    gw.foreign_queue_register(user=None, name="BAD", link=link, provider_queue=bad)
    gw.job_create(
        user=None,
        job_name="J",
        propagation_type="INBOUND",
        source=f"BUS@{link.name}",
        destination="DST",
        exception_queue=f"BAD@{link.name}",
    )
    _amqp_put(bus, b'{"ok": 1}', content_type="application/json", message_id="m1")
    _amqp_put(bus, b"\xff\xfe not utf-8", message_id="m2")
    _amqp_put(bus, b"{not json", content_type="application/json", message_id="m3")
    _amqp_put(bus, b"just text", content_type="text/plain", message_id="m4")
    gateway.worker("w").wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").exceptionq_msgs == 2, 30), gateway.job(
        "J"
    ).last_error_msg
    job = gateway.job("J")
    assert (job.propagated_msgs, job.status, job.failures) == (2, "READY", 0)
    assert sorted(map(repr, (m.payload for m in drain(queues_["DST"])))) == sorted(
        [repr({"ok": 1}), repr("just text")]
    )
    moved = _amqp_get_all(bad)
    assert sorted(b for _, b in moved) == sorted([b"\xff\xfe not utf-8", b"{not json"])
    reasons = [p.headers["mgw-exception-reason"] for p, _ in moved]
    assert any("UTF-8" in r for r in reasons) and any("not JSON" in r for r in reasons)
    assert all(r.startswith("[724] ") for r in reasons), reasons
    assert _conversion_codes(2) == ["724", "724"]
    assert _amqp_get_all(bus) == []  # all acknowledged


def _conversion_codes(n: int) -> list[str]:
    """The codes of the agent's "moved to the exception queue" log lines, once ``n`` of them
    are written (the agent flushes its log at each poll)."""
    lines = AgentLogLine.objects.filter(text__contains="moved to the exception queue")
    wait_for(lambda: lines.count() >= n, 10)
    return sorted(lines.values_list("code", flat=True))


def test_an_agent_start_resets_failed_jobs_and_zeroes_the_counters(gateway, foreign, queues_):
    """§1.9.3 and §1.12: FAILED jobs are reset when the agent starts; PROPAGATED_MSGS and
    EXCEPTIONQ_MSGS count from the start."""
    link = gateway.link("AMQP")
    bus = foreign("AMQP")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=bus)
    gw.job_create(
        user=None,
        job_name="OK",
        propagation_type="OUTBOUND",
        source="DST",
        destination=f"BUS@{link.name}",
    )
    gw.job_create(
        user=None,
        job_name="J",
        propagation_type="OUTBOUND",
        source="SRC",
        destination=f"BUS@{link.name}",
        transformation="MGW_REJECT_POISON",
    )
    qs.message_enqueue(user=None, queue=queues_["DST"], messages=[engine.NewMessage(payload=1)])
    qs.message_enqueue(
        user=None, queue=queues_["SRC"], messages=[engine.NewMessage(payload={"poison": True})]
    )
    gateway.worker("w").wait_registered()
    gateway.start()
    assert wait_for(lambda: gateway.job("J").status == "FAILED", 30)
    assert wait_for(lambda: gateway.job("OK").propagated_msgs == 1, 10)
    gateway.stop()
    assert gateway.job("J").status == "FAILED"
    gw.job_alter(user=None, job=gateway.job("J"), exception_queue="EXC")
    gateway.start()
    assert wait_for(lambda: gateway.job("J").exceptionq_msgs == 1, 20)
    j, ok = gateway.job("J"), gateway.job("OK")
    assert (j.status, j.failures) == ("READY", 0)
    assert ok.propagated_msgs == 0  # counted since this start
