"""Trace a message: where it would go, hop by hop, and which rule decides each hop. Nothing is
enqueued."""

from __future__ import annotations

import pytest

from jobs import selectors, services
from queues.models import Message
from rules.lang import message_from_json

pytestmark = pytest.mark.django_db


def test_it_follows_two_hops_and_names_the_deciding_rules(
    admin_user, mc_table, sc_table, make_queue, rule_set
):
    a, b = make_queue("A", mc_table), make_queue("B", mc_table)
    c, d = make_queue("C", sc_table), make_queue("D", sc_table)
    services.propagation_create(
        user=admin_user,
        name="A_B",
        source_queue=a,
        destination_queue=b,
        positive_rule_set=rule_set("EU", ":msg.region = 'EU'"),
    )
    services.propagation_create(
        user=admin_user,
        name="B_C",
        source_queue=b,
        destination_queue=c,
        negative_rule_set=rule_set("NO_SMALL", ":msg.amount < 10"),
    )
    services.propagation_create(
        user=admin_user,
        name="A_D",
        source_queue=a,
        destination_queue=d,
        positive_rule_set=rule_set("US", ":msg.region = 'US'"),
    )
    msg = message_from_json({"kind": "user", "payload": {"region": "EU", "amount": 50}})
    out = selectors.trace(queue=a, message=msg)
    hops = {h["propagation"]: h for h in out["hops"]}
    assert hops["A_B"]["decision"] == "PERFORM" and hops["A_B"]["rule"] == "EU_R0"
    assert hops["A_D"]["decision"] == "DISCARD" and hops["A_D"]["rule"] is None
    assert hops["B_C"]["decision"] == "PERFORM" and hops["B_C"]["depth"] == 1
    assert out["reaches"] == ["B", "C"]

    small = message_from_json({"kind": "user", "payload": {"region": "EU", "amount": 5}})
    hops = {h["propagation"]: h for h in selectors.trace(queue=a, message=small)["hops"]}
    assert hops["B_C"]["decision"] == "DISCARD" and hops["B_C"]["rule"] == "NO_SMALL_R0"
    assert hops["B_C"]["rule_set"] == "NO_SMALL"
    assert not Message.objects.exists()


def test_a_cycle_is_reported_not_followed(admin_user, mc_table, make_queue):
    a, b = make_queue("A", mc_table), make_queue("B", mc_table)
    services.propagation_create(user=admin_user, name="A_B", source_queue=a, destination_queue=b)
    services.propagation_create(user=admin_user, name="B_A", source_queue=b, destination_queue=a)
    out = selectors.trace(queue=a, message=message_from_json({"kind": "user", "payload": {}}))
    assert [(h["propagation"], h.get("cycle", False)) for h in out["hops"]] == [
        ("A_B", False),
        ("B_A", True),
    ]
