"""A window moves messages through the rule sets, once, in the source's order."""

from __future__ import annotations

import pytest

from jobs import services
from jobs.models import PropagationRun
from queues.models import Message

from .helpers import enqueue, payloads_at, run_now

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_routes_messages_by_rule_set_to_several_destinations(
    admin_user, mc_table, sc_table, make_queue, rule_set
):
    src = make_queue("SRC", mc_table)
    eu, us = make_queue("EU", sc_table), make_queue("US", sc_table)
    p_eu = services.propagation_create(
        user=admin_user,
        name="TO_EU",
        source_queue=src,
        destination_queue=eu,
        positive_rule_set=rule_set("EU_RS", ":msg.region = 'EU'"),
    )
    p_us = services.propagation_create(
        user=admin_user,
        name="TO_US",
        source_queue=src,
        destination_queue=us,
        positive_rule_set=rule_set("US_RS", ":msg.region = 'US'"),
    )
    enqueue(src, [{"region": r, "n": i} for i, r in enumerate(["EU", "US", "EU", "ASIA", "US"])])

    assert run_now(p_eu) == ["SUCCEEDED: slice"]
    assert run_now(p_us) == ["SUCCEEDED: slice"]  # (the dispatch opened TO_EU's next run too)

    assert payloads_at(eu) == [{"region": "EU", "n": 0}, {"region": "EU", "n": 2}]
    assert payloads_at(us) == [{"region": "US", "n": 1}, {"region": "US", "n": 4}]
    # Both propagations took every message, so the source holds none for anyone.
    assert not Message.objects.filter(queue=src, state="READY").exists()
    run = PropagationRun.objects.filter(propagation=p_eu).earliest("id")
    assert (run.messages, run.propagated, run.discarded) == (5, 2, 3)


def test_the_source_keeps_a_message_until_every_propagation_has_it(
    admin_user, mc_table, sc_table, make_queue
):
    src = make_queue("SRC", mc_table)
    a, b = make_queue("A", sc_table), make_queue("B", sc_table)
    pa = services.propagation_create(
        user=admin_user, name="TO_A", source_queue=src, destination_queue=a
    )
    services.propagation_create(user=admin_user, name="TO_B", source_queue=src, destination_queue=b)
    (mid,) = enqueue(src, [{"x": 1}])
    run_now(pa)
    assert payloads_at(a) == [{"x": 1}]
    assert Message.objects.get(pk=mid).state == "READY"  # TO_B has not taken it yet
