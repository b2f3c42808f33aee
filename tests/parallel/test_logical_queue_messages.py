"""Enqueue and dequeue on a logical queue: server mode (this process's AQ_INSTANCE_NAME) and
fixed-client mode pick a partition active on the instance and keep it for the session; a group
key always maps to one partition; selectors and buffered messages are refused with the reason."""

from __future__ import annotations

import pytest
from django.db import transaction

from core.exceptions import DomainError
from parallel import services as ps
from parallel.client import LogicalQueueClient
from parallel.engine import ORDERED_LOCK
from queues import engine
from queues import services as qs
from queues.services import DequeueRequest

from .conftest import down

pytestmark = pytest.mark.django_db


@pytest.fixture
def orders(admin_user, three_instances):
    """Six partitions over n1, n2, n3: n1 owns P1 and P4, n2 P2 and P5, n3 P3 and P6."""
    return ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=6)


def depth(name: str) -> int:
    from queues.models import Message

    return Message.objects.filter(queue__name=name).count()


def test_server_mode_uses_a_partition_of_this_instance_and_keeps_it(orders, admin_user, settings):
    settings.AQ_INSTANCE_NAME = "n2"
    seen = set()
    for _ in range(8):  # eight sessions: each keeps one partition, all of them n2's
        client = LogicalQueueClient("ORDERS", user=admin_user)
        for i in range(3):
            client.enqueue({"i": i})
        seen.add(client.partition)
        assert depth(client.partition) >= 3
    assert seen <= {"ORDERS_P2", "ORDERS_P5"}
    assert depth("ORDERS_P2") + depth("ORDERS_P5") == 24
    assert sum(depth(f"ORDERS_P{i}") for i in (1, 3, 4, 6)) == 0


def test_fixed_client_mode_names_its_instance(orders, admin_user, settings):
    settings.AQ_INSTANCE_NAME = "n1"  # the process's own instance does not matter here
    client = LogicalQueueClient("ORDERS", user=admin_user, instance="N3")
    client.enqueue({"a": 1})
    assert client.partition in {"ORDERS_P3", "ORDERS_P6"}
    got = client.dequeue()
    assert [m.payload for m in got] == [{"a": 1}]


def test_an_instance_with_no_partition_is_told_where_they_are(orders, admin_user):
    with pytest.raises(DomainError) as err:
        LogicalQueueClient("ORDERS", user=admin_user, instance="n7").enqueue({"a": 1})
    assert err.value.field == "instance"
    assert "active on: n1, n2, n3" in err.value.message


def test_after_failover_the_session_moves_to_the_partitions_the_instance_now_owns(
    orders, admin_user
):
    n3 = LogicalQueueClient("ORDERS", user=admin_user, instance="n3")
    n3.enqueue({"a": 1})
    down("n2")
    qs.queue_table_owners_refresh()  # P2 and P5 fail over to their secondary, n3

    # n3 now owns four partitions; n2's clients must move (the paper: client failover).
    with pytest.raises(DomainError) as err:
        LogicalQueueClient("ORDERS", user=admin_user, instance="n2").enqueue({"a": 2})
    assert err.value.field == "instance"
    seen = {ps.partition_for(logical_queue=orders, instance="n3").queue.name for _ in range(60)}
    assert seen == {"ORDERS_P2", "ORDERS_P3", "ORDERS_P5", "ORDERS_P6"}


def test_a_group_key_always_goes_to_one_partition_and_dequeues_in_order(orders, admin_user):
    clients = [LogicalQueueClient("ORDERS", user=admin_user, instance=n) for n in ("n1", "n2")]
    for i in range(6):
        for c in clients:  # two sessions on different instances, one key
            c.enqueue({"i": i, "by": c.instance}, key="order-42")
    target = ps.partition_for(logical_queue=orders, key="order-42").queue.name
    assert depth(target) == 12
    got = clients[0].dequeue(key="order-42", batch=20)
    assert [(m.payload["i"], m.payload["by"]) for m in got] == [
        (i, n) for i in range(6) for n in ("n1", "n2")
    ]


def test_every_message_is_dequeued_once_across_partitions(orders):
    producers = [LogicalQueueClient("ORDERS", instance=n) for n in ("n1", "n2", "n3")] * 2
    sent = [p.enqueue({"i": i}) for i in range(10) for p in producers]
    consumers = [LogicalQueueClient("ORDERS", instance=n) for n in ("n1", "n2", "n3")]
    got = []
    for c in consumers:  # each drains its instance's partitions, its own first
        while batch := c.dequeue(batch=7):
            got += [m.id for m in batch]
    assert sorted(got) == sorted(sent) and len(got) == 60


@pytest.mark.parametrize(
    ("field", "value"),
    [("correlation", "X"), ("msgid", 1), ("condition", "tab.user_data.n = 1")],
)
def test_a_selector_dequeue_is_refused_with_the_papers_reason(orders, admin_user, field, value):
    with pytest.raises(DomainError) as err:
        ps.logical_dequeue(
            user=admin_user,
            logical_queue=orders,
            instance="n1",
            request=DequeueRequest(**{field: value}),
        )
    assert err.value.field == field and "no selector criteria" in err.value.message


def test_buffered_messages_are_refused(orders, admin_user):
    with pytest.raises(DomainError) as err:
        ps.logical_enqueue(
            user=admin_user,
            logical_queue=orders,
            instance="n1",
            messages=[engine.NewMessage(payload=1)],
            delivery_mode="BUFFERED",
        )
    assert err.value.field == "delivery_mode" and "persistent messages only" in err.value.message
    with pytest.raises(DomainError) as err:
        ps.logical_dequeue(
            user=admin_user,
            logical_queue=orders,
            instance="n1",
            request=DequeueRequest(delivery_mode="BUFFERED"),
        )
    assert err.value.field == "delivery_mode"


def test_an_ordered_dequeue_skips_a_partition_another_consumer_holds(orders, admin_user):
    """The advisory lock is held by this transaction until it commits; a second connection
    (another consumer) finds the group's partition busy and gets nothing rather than the next
    message of the group."""
    import psycopg

    client = LogicalQueueClient("ORDERS", user=admin_user, instance="n1")
    client.enqueue({"i": 0}, key="g")
    client.enqueue({"i": 1}, key="g")
    part = ps.partition_for(logical_queue=orders, key="g")
    with transaction.atomic():
        assert [m.payload for m in client.dequeue(key="g", ordered=True)] == [{"i": 0}]
        with psycopg.connect(qs.conninfo(), autocommit=True) as other:
            busy = other.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (ORDERED_LOCK, part.queue_id)
            ).fetchone()[0]
        assert busy is False
