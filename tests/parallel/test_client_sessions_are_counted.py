"""Clients of a logical queue register a session with their enqueue and dequeue calls (the API
and the Python client); the balance view counts the sessions seen within
AQ_PARALLEL_SESSION_LEASE_S per instance and per partition."""

from __future__ import annotations

import uuid

import pytest

from core.exceptions import DomainError
from parallel import selectors
from parallel import services as ps
from parallel.client import LogicalQueueClient
from parallel.models import LogicalQueueSession, SessionMode
from queues import engine

pytestmark = pytest.mark.django_db

BASE = "/api/logical-queues/"


@pytest.fixture
def orders(admin_user, three_instances):
    """Six partitions over n1, n2, n3: n1 owns P1 and P4, n2 P2 and P5, n3 P3 and P6."""
    return ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=6)


def counts(balance: dict) -> tuple[dict[str, int], dict[str, int]]:
    return (
        {a["instance"]: a["clients"] for a in balance["per_instance"]},
        {p["queue"]: p["clients"] for p in balance["partitions"] if p["clients"]},
    )


def test_each_client_is_one_session_counted_on_its_instance_and_partition(
    orders, admin_user, settings
):
    settings.AQ_INSTANCE_NAME = "n2"
    fixed = [LogicalQueueClient("ORDERS", user=admin_user, instance="n1") for _ in range(2)]
    for client in fixed:
        for i in range(4):  # many calls, one session
            client.enqueue({"i": i})
        client.dequeue(batch=2)
    server = LogicalQueueClient("ORDERS", user=admin_user)  # server mode: n2
    server.enqueue({"s": 1})
    keyed = LogicalQueueClient("ORDERS", user=admin_user, instance="n3")
    keyed.enqueue({"k": 1}, key="order-42")  # counts on n3, keeps no partition

    balance = selectors.logical_queue_balance(orders)
    per_instance, per_partition = counts(balance)
    assert per_instance == {"n1": 2, "n2": 1, "n3": 1}
    assert balance["clients"] == 4
    assert sum(per_partition.values()) == 3  # the keyed session keeps none
    assert set(per_partition) <= {fixed[0].partition, fixed[1].partition, server.partition}
    assert {fixed[0].partition, fixed[1].partition} <= {"ORDERS_P1", "ORDERS_P4"}
    session = LogicalQueueSession.objects.get(pk=server.session)
    assert (session.mode, session.instance, session.partition.queue.name) == (
        SessionMode.SERVER,
        "n2",
        server.partition,
    )
    assert LogicalQueueSession.objects.get(pk=fixed[0].session).mode == SessionMode.FIXED


def test_a_session_without_calls_for_the_lease_no_longer_counts_and_is_forgotten(
    orders, admin_user, settings
):
    old = LogicalQueueClient("ORDERS", user=admin_user, instance="n1")
    old.enqueue({"a": 1})
    assert selectors.logical_queue_balance(orders)["clients"] == 1
    settings.AQ_PARALLEL_SESSION_LEASE_S = 0  # every session's lease has run out
    assert selectors.logical_queue_balance(orders)["clients"] == 0
    LogicalQueueClient("ORDERS", user=admin_user, instance="n2").enqueue({"b": 1})
    # The new session's registration cleared the expired one.
    assert not LogicalQueueSession.objects.filter(pk=old.session).exists()


def test_internal_callers_without_a_session_register_none(orders, admin_user):
    ps.logical_enqueue(
        user=admin_user,
        logical_queue=orders,
        instance="n1",
        messages=[engine.NewMessage(payload=1)],
    )
    assert not LogicalQueueSession.objects.exists()


def test_a_bad_or_foreign_session_is_refused_naming_the_field(orders, admin_user):
    ps.logical_queue_create(user=admin_user, name="OTHER", partitions=3)
    other = LogicalQueueClient("OTHER", user=admin_user, instance="n1")
    other.enqueue({"a": 1})
    with pytest.raises(DomainError) as err:
        ps.logical_enqueue(
            user=admin_user,
            logical_queue=orders,
            instance="n1",
            messages=[engine.NewMessage(payload=1)],
            session=other.session,
        )
    assert err.value.field == "session" and "OTHER" in err.value.message
    with pytest.raises(DomainError) as err:
        ps.logical_enqueue(
            user=admin_user,
            logical_queue=orders,
            messages=[engine.NewMessage(payload=1)],
            session="not-a-uuid",
        )
    assert err.value.field == "session"


def test_the_api_gives_a_session_counts_it_once_and_shows_the_clients(admin_api, orders):
    url = f"{BASE}ORDERS/enqueue/"
    first = admin_api.post(url, {"payload": {"a": 1}, "instance": "n3"}, format="json").json()
    session = first["session"]
    assert uuid.UUID(session)
    for i in range(3):  # the session sent back: the same client, the same partition
        again = admin_api.post(
            url, {"payload": {"i": i}, "instance": "n3", "session": session}, format="json"
        ).json()
        assert (again["session"], again["partition"]) == (session, first["partition"])
    got = admin_api.post(
        f"{BASE}ORDERS/dequeue/", {"instance": "n3", "session": session}, format="json"
    ).json()
    assert got["session"] == session and len(got["messages"]) == 1
    admin_api.post(url, {"payload": {"b": 1}, "instance": "n1"}, format="json")  # a new client

    balance = admin_api.get(f"{BASE}ORDERS/balance/").json()
    per_instance, per_partition = counts(balance)
    assert per_instance == {"n1": 1, "n2": 0, "n3": 1} and balance["clients"] == 2
    assert per_partition[first["partition"]] == 1
    assert balance["session_lease_s"] == 60

    r = admin_api.post(url, {"payload": 1, "session": "x"}, format="json")
    assert r.status_code == 400 and "session" in r.json()


def test_the_page_shows_clients_per_instance_and_partition(admin_client, orders, admin_user):
    client = LogicalQueueClient("ORDERS", user=admin_user, instance="n2")
    client.enqueue({"a": 1})
    page = admin_client.get(f"/queues/parallel/{orders.pk}/").content.decode()
    assert f'<tr data-partition="{client.partition}">' in page
    row = page.split(f'<tr data-partition="{client.partition}">')[1].split("</tr>")[0]
    assert '<td class="text-end" data-clients>1</td>' in row
    n2 = page.split('<tr data-instance="n2">')[1].split("</tr>")[0]
    assert '<td class="text-end" data-clients>1</td>' in n2
    assert "AQ_PARALLEL_SESSION_LEASE_S" in page
