"""When the instance a session's partition was active on goes down (its workers' heartbeats
stop: here a beat with a zero AQ_INSTANCE_HEARTBEAT_LIMIT_S, so the lease ends at once), the
partition is served by its secondary and the session's next call is told, once: PartitionMoved,
409 partition_moved through the API, naming the partition and the old and new active instance.
A blocking dequeue in progress ends with it instead of waiting out its timeout."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from core.exceptions import DomainError
from parallel import services as ps
from parallel.client import LogicalQueueClient, PartitionMoved
from parallel.models import LogicalQueueSession
from queues import engine
from queues import services as qs

from .conftest import up

BASE = "/api/logical-queues/"


def lease_ends(settings, name: str) -> None:
    """A real heartbeat of ``name``'s worker with a lease of zero seconds: DOWN at once."""
    limit = settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S
    settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S = 0
    up(name)
    settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S = limit


@pytest.fixture
def orders(admin_user, three_instances):
    """Six partitions over n1, n2, n3: P1 and P4 are n1's with n2 as secondary."""
    return ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=6)


@pytest.mark.django_db
def test_a_fixed_client_is_told_where_its_partition_went_once(orders, admin_user, settings):
    client = LogicalQueueClient("ORDERS", user=admin_user, instance="n1")
    client.enqueue({"a": 1})
    kept = client.partition
    assert kept in {"ORDERS_P1", "ORDERS_P4"}

    lease_ends(settings, "n1")

    with pytest.raises(PartitionMoved) as moved:
        client.enqueue({"a": 2})
    assert (moved.value.partition, moved.value.from_instance, moved.value.to_instance) == (
        kept,
        "n1",
        "n2",
    )
    assert moved.value.status_code == 409 and moved.value.code == "partition_moved"
    assert client.moves == [moved.value] and client.partition is None
    assert LogicalQueueSession.objects.get(pk=client.session).partition is None
    # Told once: the next call is the ordinary refusal of an instance that serves nothing now.
    with pytest.raises(DomainError) as err:
        client.enqueue({"a": 3})
    assert err.value.field == "instance" and "active on: n2, n3" in err.value.message
    client.instance = moved.value.to_instance  # the client moves
    client.enqueue({"a": 4})
    assert client.partition in {"ORDERS_P1", "ORDERS_P2", "ORDERS_P4", "ORDERS_P5"}


@pytest.mark.django_db
def test_a_server_mode_client_repicks_on_its_instance_after_failback(orders, admin_user, settings):
    settings.AQ_INSTANCE_NAME = "n3"
    lease_ends(settings, "n2")
    qs.queue_table_owners_refresh()  # the queue monitor's pass: P2 and P5 fail over to n3
    client = LogicalQueueClient("ORDERS", user=admin_user)
    client.partition = "ORDERS_P2"  # the session happened to pick P2, now served by n3
    client.enqueue({"a": 1})
    assert client.partition == "ORDERS_P2"

    up("n2")
    qs.queue_table_owners_refresh()  # failback: P2 and P5 are n2's again

    client.enqueue({"a": 2})  # told, then on another partition of n3 without the caller's help
    assert client.partition in {"ORDERS_P3", "ORDERS_P6"}
    assert [(m.partition, m.from_instance, m.to_instance) for m in client.moves] == [
        ("ORDERS_P2", "n3", "n2")
    ]


@pytest.mark.django_db
def test_the_api_answers_409_partition_moved_naming_the_instances(orders, admin_api, settings):
    url = f"{BASE}ORDERS/enqueue/"
    first = admin_api.post(url, {"payload": 1, "instance": "n1"}, format="json").json()
    session = first["session"]

    lease_ends(settings, "n1")

    r = admin_api.post(url, {"payload": 2, "instance": "n1", "session": session}, format="json")
    assert r.status_code == 409, r.content
    body = r.json()
    assert body["code"] == "partition_moved"
    assert (body["partition"], body["from"], body["to"]) == (first["partition"], "n1", "n2")
    assert first["partition"] in body["detail"]
    # The client moves to the instance named and keeps its session.
    r = admin_api.post(url, {"payload": 2, "instance": "n2", "session": session}, format="json")
    assert r.status_code == 201 and r.json()["instance"] == "n2"
    balance = admin_api.get(f"{BASE}ORDERS/balance/").json()
    assert {a["instance"]: a["clients"] for a in balance["per_instance"]}["n2"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_blocking_dequeue_ends_with_the_notice_before_its_timeout(orders, admin_user, settings):
    settings.AQ_PARALLEL_FAILOVER_CHECK_S = 0.2
    client = LogicalQueueClient("ORDERS", user=admin_user, instance="n1")
    client.enqueue({"a": 1})
    assert len(client.dequeue()) == 1  # P1 or P4 kept, and every partition of n1 empty
    outcome: dict[str, object] = {}

    def consumer() -> None:
        try:
            outcome["got"] = client.dequeue(wait=300)
        except PartitionMoved as exc:
            outcome["moved"] = exc
        finally:
            engine.thread_listener(qs.conninfo()).close()
            connections.close_all()

    thread = threading.Thread(target=consumer)
    thread.start()
    # The consumer is blocked once its LISTEN connection exists (it waits there).
    with connection.cursor() as cur:
        for _ in range(300):
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND query LIKE 'LISTEN%%'"
            )
            if cur.fetchone()[0]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the consumer never started waiting")

    lease_ends(settings, "n1")

    thread.join(120)  # far less than the dequeue's 300 s
    assert not thread.is_alive()
    assert "got" not in outcome
    moved = outcome["moved"]
    assert isinstance(moved, PartitionMoved)
    assert (moved.partition, moved.from_instance, moved.to_instance) == (
        client.moves[0].partition,
        "n1",
        "n2",
    )
