"""The API creates, maps, rebalances and drops logical queues and enqueues/dequeues on them
through the same services; bad input is a 400 naming the field."""

from __future__ import annotations

import pytest

from parallel.models import LogicalQueue
from queues.models import QueueTable

from .conftest import up

pytestmark = pytest.mark.django_db

BASE = "/api/logical-queues/"


@pytest.fixture
def created(admin_api, three_instances):
    r = admin_api.post(BASE, {"name": "ORDERS", "partitions": 3}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_create_answers_with_the_mapping(created):
    assert created["partition_count"] == 3 and created["warnings"] == []
    assert [
        (p["queue"], p["primary_instance"], p["secondary_instance"], p["active_instance"])
        for p in created["partitions"]
    ] == [
        ("ORDERS_P1", "n1", "n2", "n1"),
        ("ORDERS_P2", "n2", "n3", "n2"),
        ("ORDERS_P3", "n3", "n1", "n3"),
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "X", "partitions": 0}, "partitions"),
        ({"name": "X", "partitions": "many"}, "partitions"),
        ({"name": "ORDERS", "partitions": 2}, "name"),
        ({"name": "X", "instances": ["n1", "n1"]}, "instances[1]"),
        ({"name": "X", "instances": [True]}, "instances[0]"),
        ({"partitions": 2}, "name"),
    ],
)
def test_bad_create_is_a_400_naming_the_field(admin_api, created, body, field):
    r = admin_api.post(BASE, body, format="json")
    assert r.status_code == 400 and field in r.json(), r.content
    assert LogicalQueue.objects.count() == 1
    assert not QueueTable.objects.filter(name__startswith="X_").exists()


def test_unknown_instances_are_accepted_with_a_warning(admin_api, three_instances):
    r = admin_api.post(BASE, {"name": "SMS", "instances": ["n1", "n8"]}, format="json")
    assert r.status_code == 201
    assert r.json()["partition_count"] == 6
    assert any("n8 has never reported" in w for w in r.json()["warnings"])


def test_enqueue_then_dequeue_keeps_the_session_partition(admin_api, created):
    r = admin_api.post(
        f"{BASE}ORDERS/enqueue/", {"payload": {"a": 1}, "instance": "n2"}, format="json"
    )
    assert r.status_code == 201, r.content
    assert r.json()["partition"] == "ORDERS_P2" and r.json()["instance"] == "n2"
    r2 = admin_api.post(
        f"{BASE}ORDERS/dequeue/", {"instance": "n2", "partition": "ORDERS_P2"}, format="json"
    )
    assert r2.status_code == 200
    assert [m["payload"] for m in r2.json()["messages"]] == [{"a": 1}]
    assert r2.json()["ids"] == r.json()["ids"]


def test_keyed_enqueue_goes_to_the_keys_partition(admin_api, created):
    parts = {
        admin_api.post(
            f"{BASE}ORDERS/enqueue/",
            {"messages": [{"payload": i}], "key": "cust-7", "instance": n},
            format="json",
        ).json()["partition"]
        for i, n in enumerate(["n1", "n2", "n3"])
    }
    assert len(parts) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"correlation": "A"}, "correlation"),
        ({"msgid": 3}, "msgid"),
        ({"condition": "tab.user_data.a = 1"}, "condition"),
        ({"delivery_mode": "BUFFERED"}, "delivery_mode"),
        ({"instance": "nowhere"}, "instance"),
        ({"partition": "OTHER"}, "partition"),
    ],
)
def test_refused_dequeues_name_the_field(admin_api, created, body, field):
    r = admin_api.post(f"{BASE}ORDERS/dequeue/", {"instance": "n1", **body}, format="json")
    assert r.status_code == 400 and field in r.json(), r.content


def test_buffered_enqueue_is_refused(admin_api, created):
    r = admin_api.post(
        f"{BASE}ORDERS/enqueue/",
        {"payload": 1, "instance": "n1", "delivery_mode": "BUFFERED"},
        format="json",
    )
    assert r.status_code == 400 and "persistent" in r.json()["delivery_mode"][0]


def test_purpose_is_editable_and_the_rest_of_the_mapping_is_not(admin_api, operator_api, created):
    pid = created["partitions"][0]["id"]
    r = admin_api.patch(f"/api/logical-queue-partitions/{pid}/", {"purpose": "EU"}, format="json")
    assert r.status_code == 200 and r.json()["purpose"] == "EU"
    assert r.json()["primary_instance"] == "n1"
    r = operator_api.patch(f"/api/logical-queue-partitions/{pid}/", {"purpose": "x"}, format="json")
    assert r.status_code == 403
    listed = admin_api.get("/api/logical-queue-partitions/?logical_queue=orders").json()
    assert [p["queue"] for p in listed["results"]] == ["ORDERS_P1", "ORDERS_P2", "ORDERS_P3"]


def test_rebuild_and_balance(admin_api, operator_api, created):
    up("n4")
    r = admin_api.post(f"{BASE}ORDERS/rebuild/", {}, format="json")
    assert r.status_code == 200 and r.json()["instances"] == ["n1", "n2", "n3", "n4"]
    assert r.json()["changed"] == ["ORDERS_P3"]  # n3 -> n4 as secondary
    assert operator_api.post(f"{BASE}ORDERS/rebuild/", {}, format="json").status_code == 403

    for i in range(3):
        admin_api.post(f"{BASE}ORDERS/enqueue/", {"payload": i, "instance": "n1"}, format="json")
    admin_api.post(f"{BASE}ORDERS/enqueue/", {"payload": 9, "instance": "n2"}, format="json")
    b = admin_api.get(f"{BASE}ORDERS/balance/?instance=n2").json()
    assert b["estimates"] is True
    assert [(p["queue"], p["depth"], p["enqueued"]) for p in b["partitions"]] == [
        ("ORDERS_P1", 3, 3),
        ("ORDERS_P2", 1, 1),
        ("ORDERS_P3", 0, 0),
    ]
    assert b["max_min_ratio"] is None and b["balanced"] is False  # an empty partition
    assert b["least_loaded_queue"] == "ORDERS_P2"


def test_drop_through_the_api(admin_api, created):
    assert admin_api.delete(f"{BASE}ORDERS/").status_code == 204
    assert not QueueTable.objects.filter(name__startswith="ORDERS_").exists()
