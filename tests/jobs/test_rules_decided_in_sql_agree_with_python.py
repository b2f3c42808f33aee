"""When a propagation's rule sets transform nothing, a batch is one SQL statement and the rules
are decided by their PostgreSQL compilation; it must route exactly as the Python engine would."""

from __future__ import annotations

import pytest

from jobs import runner, services
from queues import engine
from queues import services as qs
from rules.lang import decide, message_from_queue
from rules.selectors import rule_set_spec

from .helpers import payloads_at, run_now

pytestmark = pytest.mark.django_db(transaction=True)

PAYLOADS = [
    {"region": "EU", "amount": 5},
    {"region": "EU", "amount": 500},
    {"region": "eu", "amount": 50},
    {"region": None, "amount": 50},
    {"amount": 70},
    {"region": "US", "amount": "12"},
    {"region": "US", "amount": "lots"},
    {"region": "APAC", "tags": ["a", "b"]},
    "plain text",
    42,
]


def test_sql_routing_equals_python_decisions(admin_user, mc_table, sc_table, make_queue, rule_set):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    pos = rule_set("POS", ":msg.region IN ('EU', 'US')", ":msg.amount > 60")
    neg = rule_set("NEG", ":msg.amount < 10", ":msg.region LIKE 'A%'")
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=dst,
        positive_rule_set=pos,
        negative_rule_set=neg,
    )
    topo = runner.load_topology(qs.raw_connection(), p.pk)
    assert topo.keep_sql is not None  # this propagation takes the one-statement path

    ids = qs.message_enqueue(
        user=None, queue=src, messages=[engine.NewMessage(payload=x) for x in PAYLOADS]
    )
    expected = [
        x
        for x in PAYLOADS
        if decide(
            message_from_queue("USER", "", x),
            positive=rule_set_spec(pos),
            negative=rule_set_spec(neg),
        ).perform
    ]
    run_now(p)
    assert payloads_at(dst) == expected
    assert 0 < len(expected) < len(ids)


def test_a_destination_subscriber_rule_sends_the_batch_through_python(
    admin_user, mc_table, make_queue
):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", mc_table)
    qs.subscriber_add(user=admin_user, queue=dst, name="BIG", rule=":msg.n > 1")
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst
    )
    qs.message_enqueue(
        user=None, queue=src, messages=[engine.NewMessage(payload={"n": n}) for n in range(4)]
    )
    run_now(p)
    # BIG takes n > 1; the rest nobody at the destination takes: exception queue, with reason.
    assert payloads_at(dst) == [{"n": 2}, {"n": 3}]
    reasons = engine_reasons(src.exception_queue_id)
    assert len(reasons) == 2 and all("No subscriber" in r for r in reasons)


def engine_reasons(queue_id: int) -> list[str]:
    from queues.models import Message

    return list(
        Message.objects.filter(queue_id=queue_id).values_list("exception_reason", flat=True)
    )
