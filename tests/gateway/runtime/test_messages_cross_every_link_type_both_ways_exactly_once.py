"""OUTBOUND then INBOUND through each foreign system: our queue → foreign queue → our other
queue, every message once, with payload, correlation, priority and headers kept."""

from __future__ import annotations

import pytest

from gateway import services as gw
from queues import engine
from queues import services as qs
from tests.gateway.runtime.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

N = 120


def _messages() -> list[engine.NewMessage]:
    payloads = [{"order": 1, "items": ["a", "b"]}, "plain text", [1, 2.5, None], 42, True]
    return [
        engine.NewMessage(
            payload={"i": i, "body": payloads[i % len(payloads)]} if i % 2 else payloads[i % 5],
            correlation=f"c-{i}",
            priority=1 + i % 2,  # AMQP carries AQ priorities -7..2 exactly (0-9 there)
            headers={"seq": i, "region": "eu", "flag": i % 3 == 0, "ratio": i / 4},
        )
        for i in range(N)
    ]


@pytest.mark.parametrize("link_type", ["AMQP", "MQTT", "NATS", "REDIS"])
def test_a_round_trip_through_the_foreign_system_keeps_every_message_once(
    gateway, foreign, link_type
):
    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    out_q = qs.queue_create(user=None, name="GW_OUT", queue_table=table)
    in_q = qs.queue_create(user=None, name="GW_IN", queue_table=table)
    link = gateway.link(link_type)
    provider = foreign(link_type)
    domain = "TOPIC" if link_type == "MQTT" else "QUEUE"
    gw.foreign_queue_register(
        user=None, name="BUS", link=link, provider_queue=provider, domain=domain
    )
    gw.job_create(
        user=None,
        job_name="JIN",
        propagation_type="INBOUND",
        source=f"BUS@{link.name}",
        destination="GW_IN",
        poll_interval=0.2,
    )
    gw.job_create(
        user=None,
        job_name="JOUT",
        propagation_type="OUTBOUND",
        source="GW_OUT",
        destination=f"BUS@{link.name}",
        poll_interval=0.2,
    )
    gateway.worker("w").wait_registered()
    gateway.start()
    # MQTT keeps only what arrives after a subscription: wait for the inbound job's.
    from gateway.models import AgentLogLine

    assert wait_for(
        lambda: AgentLogLine.objects.filter(
            component="job JIN", text__startswith="subscribed"
        ).exists(),
        20,
    ), gateway.job("JIN").last_error_msg
    sent = _messages()
    qs.message_enqueue(user=None, queue=out_q, messages=sent)

    assert wait_for(lambda: gateway.job("JIN").propagated_msgs >= N, 60), (
        gateway.job("JOUT").__dict__,
        gateway.job("JIN").__dict__,
    )
    gateway.stop()
    got = drain_all(in_q)
    assert len(got) == N
    by_seq = {m.headers["seq"]: m for m in got}
    assert sorted(by_seq) == list(range(N))
    for i, original in enumerate(sent):
        m = by_seq[i]
        assert m.payload == original.payload
        assert m.correlation == original.correlation
        assert m.priority == original.priority
        assert m.headers == original.headers
    out, inn = gateway.job("JOUT"), gateway.job("JIN")
    assert (out.propagated_msgs, out.exceptionq_msgs, out.failures) == (N, 0, 0)
    assert (inn.propagated_msgs, inn.exceptionq_msgs, inn.failures) == (N, 0, 0)
    assert out.status == inn.status == "READY"


def drain_all(queue):
    from tests.gateway.runtime.helpers import drain

    return drain(queue)
