"""Subscriber rules pick a multi-consumer message's recipients at enqueue, in SQL; a dequeue
condition picks which messages a dequeue may take. Both use the rules engine's PostgreSQL compiler,
so they mean exactly what the Python evaluator says."""

from __future__ import annotations

import pytest

from queues import engine, services
from queues.models import Message, MessageConsumer

from .helpers import make_queue, msg, payloads, put, take


@pytest.fixture
def regional(admin_user):
    queue = make_queue(admin_user, "REGIONAL", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="EU", rule=":msg.region = 'EUROPE'")
    services.subscriber_add(
        user=admin_user, queue=queue, name="BIG", rule=":msg.amount >= 1000 OR :msg.vip = 'Y'"
    )
    services.subscriber_add(user=admin_user, queue=queue, name="ALL")
    return queue


def _consumers(mid: int) -> set[str]:
    return set(
        MessageConsumer.objects.filter(message_id=mid).values_list("subscriber__name", flat=True)
    )


def test_each_subscriber_gets_only_the_messages_its_rule_is_true_for(regional, admin_user):
    eu_small, us_big, eu_big = put(
        regional,
        {"region": "EUROPE", "amount": 5},
        {"region": "AMERICAS", "amount": 5000},
        {"region": "EUROPE", "amount": "1000"},
        user=admin_user,
    )
    assert _consumers(eu_small) == {"EU", "ALL"}
    assert _consumers(us_big) == {"BIG", "ALL"}
    # '1000' compares as a number, as Oracle's implicit conversion does.
    assert _consumers(eu_big) == {"EU", "BIG", "ALL"}
    assert Message.objects.get(pk=eu_big).pending_consumers == 3
    assert payloads(take(regional, user=admin_user, consumer_name="BIG", batch=10)) == [
        {"region": "AMERICAS", "amount": 5000},
        {"region": "EUROPE", "amount": "1000"},
    ]


def test_a_null_rule_result_is_not_true(regional, admin_user):
    (mid,) = put(regional, {"amount": 1}, user=admin_user)  # no region: EU's rule is NULL
    assert _consumers(mid) == {"ALL"}


def test_a_message_no_subscriber_takes_is_refused_and_nothing_is_written(admin_user):
    queue = make_queue(admin_user, "PICKY", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="EU", rule=":msg.region = 'EUROPE'")
    before = Message.objects.count()
    with pytest.raises(engine.NoSubscribers) as err:
        put(queue, {"region": "EUROPE"}, {"region": "ASIA"}, user=admin_user)
    assert err.value.field == "messages[1]"
    assert Message.objects.count() == before


def test_an_explicit_recipient_list_overrides_the_rules(regional, admin_user):
    (mid,) = put(regional, {"region": "ASIA"}, user=admin_user, recipients=["EU"])
    assert _consumers(mid) == {"EU"}


def test_a_subscriber_rule_with_a_syntax_error_is_refused_naming_rule(regional, admin_user):
    with pytest.raises(engine.InvalidMessage) as err:
        services.subscriber_add(user=admin_user, queue=regional, name="BAD", rule=":msg.x = ")
    assert err.value.field == "rule"
    assert "column" in str(err.value)
    assert not regional.subscribers.filter(name="BAD").exists()


def test_dequeue_by_condition_takes_only_matching_messages_in_order(admin_user):
    queue = make_queue(admin_user, "CONDQ")
    put(queue, {"n": 1, "k": "a"}, {"n": 2, "k": "b"}, {"n": 3, "k": "a"}, user=admin_user)
    got = take(queue, user=admin_user, batch=10, condition=":msg.k = 'a'")
    assert payloads(got) == [{"n": 1, "k": "a"}, {"n": 3, "k": "a"}]
    assert payloads(take(queue, user=admin_user, batch=10)) == [{"n": 2, "k": "b"}]


def test_dequeue_by_condition_on_change_records_uses_member_functions(admin_user):
    queue = make_queue(admin_user, "CDCQ")
    row = {
        "source_database_name": "DBS1.EXAMPLE.COM",
        "command_type": "INSERT",
        "object_owner": "HR",
        "old_values": {},
    }
    services.message_enqueue(
        user=admin_user,
        queue=queue,
        messages=[
            msg({**row, "object_name": "LOCATIONS", "new_values": {"ID": 1}}, kind="ROW_LCR"),
            msg({**row, "object_name": "EMPLOYEES", "new_values": {"ID": 2}}, kind="ROW_LCR"),
        ],
    )
    got = take(
        queue,
        user=admin_user,
        batch=10,
        condition=":dml.get_object_name() = 'EMPLOYEES' AND "
        ":dml.get_value('NEW', 'ID').AccessNumber() = 2",
    )
    assert [m.payload["object_name"] for m in got] == ["EMPLOYEES"]


def test_a_bad_dequeue_condition_is_an_error_naming_condition(admin_user):
    queue = make_queue(admin_user, "CONDBAD")
    with pytest.raises(engine.InvalidMessage) as err:
        take(queue, user=admin_user, condition=":msg.k = = 1")
    assert err.value.field == "condition"
