"""Dequeue picks messages by consumer name, correlation id (with wildcards) or message id."""

from __future__ import annotations

import pytest

from queues import engine, services

from .helpers import make_queue, payloads, put, take


def test_dequeue_by_correlation_takes_only_matching_messages_in_order(admin_user, queue):
    put(queue, "a1", user=admin_user, correlation="ORDER-1")
    put(queue, "b", user=admin_user, correlation="INVOICE-1")
    put(queue, "a2", user=admin_user, correlation="ORDER-22")
    assert payloads(take(queue, user=admin_user, correlation="ORDER-1")) == ["a1"]
    assert take(queue, user=admin_user, correlation="ORDER-1") == []
    assert payloads(take(queue, user=admin_user, correlation="INVOICE-1")) == ["b"]


def test_a_percent_wildcard_in_the_correlation_matches_any_run_of_characters(admin_user, queue):
    put(queue, "a1", user=admin_user, correlation="ORDER-1")
    put(queue, "b", user=admin_user, correlation="INVOICE-1")
    put(queue, "a2", user=admin_user, correlation="ORDER-22")
    got = take(queue, user=admin_user, correlation="ORDER-%", batch=10)
    assert payloads(got) == ["a1", "a2"]
    assert payloads(take(queue, user=admin_user, batch=10)) == ["b"]


def test_an_underscore_wildcard_matches_exactly_one_character(admin_user, queue):
    put(queue, "one", user=admin_user, correlation="ORDER-1")
    put(queue, "two", user=admin_user, correlation="ORDER-22")
    assert payloads(take(queue, user=admin_user, correlation="ORDER-_", batch=10)) == ["one"]


def test_dequeue_by_msgid_takes_that_message_out_of_order(admin_user, queue):
    ids = put(queue, "a", "b", "c", user=admin_user)
    [got] = take(queue, user=admin_user, msgid=ids[2])
    assert got.payload == "c"
    assert take(queue, user=admin_user, msgid=ids[2]) == []
    assert payloads(take(queue, user=admin_user, batch=10)) == ["a", "b"]


def test_dequeue_by_msgid_of_another_queues_message_finds_nothing(admin_user, queue):
    other = make_queue(admin_user, "OTHER")
    [mid] = put(other, "x", user=admin_user)
    assert take(queue, user=admin_user, msgid=mid) == []
    assert payloads(take(other, user=admin_user, msgid=mid)) == ["x"]


def test_a_multi_consumer_queue_dequeues_by_consumer_name(admin_user):
    queue = make_queue(admin_user, "PUBSUB", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="BILLING")
    services.subscriber_add(user=admin_user, queue=queue, name="SHIPPING")
    put(queue, "a", "b", user=admin_user)
    assert payloads(take(queue, user=admin_user, consumer_name="billing", batch=10)) == ["a", "b"]
    assert take(queue, user=admin_user, consumer_name="BILLING") == []
    assert payloads(take(queue, user=admin_user, consumer_name="SHIPPING", batch=10)) == [
        "a",
        "b",
    ]


def test_a_multi_consumer_dequeue_without_or_with_an_unknown_consumer_names_the_field(
    admin_user,
):
    queue = make_queue(admin_user, "PUBSUB", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="BILLING")
    put(queue, "a", user=admin_user)
    for name in (None, "NOBODY"):
        with pytest.raises(engine.InvalidMessage) as err:
            take(queue, user=admin_user, consumer_name=name)
        assert err.value.field == "consumer_name"


def test_a_single_consumer_dequeue_with_a_consumer_name_is_refused(admin_user, queue):
    put(queue, "a", user=admin_user)
    with pytest.raises(engine.InvalidMessage) as err:
        take(queue, user=admin_user, consumer_name="BILLING")
    assert err.value.field == "consumer_name"


def test_a_multi_consumer_queue_combines_consumer_name_and_correlation(admin_user):
    queue = make_queue(admin_user, "PUBSUB", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="BILLING")
    put(queue, "x", user=admin_user, correlation="X")
    put(queue, "y", user=admin_user, correlation="Y")
    got = take(queue, user=admin_user, consumer_name="BILLING", correlation="Y")
    assert payloads(got) == ["y"]
    assert payloads(take(queue, user=admin_user, consumer_name="BILLING", batch=5)) == ["x"]
