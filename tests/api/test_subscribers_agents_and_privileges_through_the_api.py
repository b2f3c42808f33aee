"""Subscribers, AQ agents with their users, and queue privileges, through the API; secure
queues enforce the grants on enqueue and dequeue."""

from __future__ import annotations

import pytest

from queues import services
from queues.models import AgentUser, QueuePrivilege, Subscriber


def test_it_adds_and_removes_a_subscriber(admin_api, multi_queue):
    added = admin_api.post("/api/subscribers/", {"queue": "EVENTS", "name": "AUDIT"})
    listed = admin_api.get(f"/api/subscribers/?queue={multi_queue.pk}").json()["results"]
    removed = admin_api.delete(f"/api/subscribers/{added.json()['id']}/")

    assert added.status_code == 201, added.content
    assert sorted(s["name"] for s in listed) == ["AUDIT", "BILLING", "SHIPPING"]
    assert removed.status_code == 204
    assert not Subscriber.objects.filter(name="AUDIT").exists()


def test_a_new_subscriber_gets_only_messages_enqueued_after_it(admin_api, multi_queue):
    admin_api.post("/api/queues/EVENTS/enqueue/", {"payload": "before"})
    admin_api.post("/api/subscribers/", {"queue": "EVENTS", "name": "AUDIT"})
    admin_api.post("/api/queues/EVENTS/enqueue/", {"payload": "after"})

    got = admin_api.post("/api/queues/EVENTS/dequeue/", {"consumer_name": "AUDIT", "batch": 5})

    assert [m["payload"] for m in got.json()["messages"]] == ["after"]


def test_it_creates_an_agent_and_enables_and_disables_a_users_access(admin_api, operator_user):
    created = admin_api.post("/api/agents/", {"name": "APP1", "address": "app1.example"})
    enabled = admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})
    privs = admin_api.get("/api/status/dba_aq_agent_privs/").json()["results"]
    disabled = admin_api.post("/api/agents/APP1/disable_access/", {"user": "oscar"})

    assert created.status_code == 201, created.content
    assert (enabled.status_code, enabled.json()["users"]) == (200, ["oscar"])
    assert [(p["agent_name"], p["db_username"]) for p in privs] == [("APP1", "oscar")]
    assert (disabled.status_code, disabled.json()["users"]) == (200, [])
    assert not AgentUser.objects.exists()


def test_enabling_access_twice_is_harmless(admin_api, operator_user):
    admin_api.post("/api/agents/", {"name": "APP1"})

    first = admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})
    second = admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})

    assert (first.status_code, second.status_code) == (200, 200)
    assert AgentUser.objects.count() == 1


def test_enabling_access_for_an_unknown_user_names_user(admin_api, snapshot):
    admin_api.post("/api/agents/", {"name": "APP1"})
    before = snapshot()

    response = admin_api.post("/api/agents/APP1/enable_access/", {"user": "ghost"})

    assert response.status_code == 400
    assert "user" in response.json()
    before.assert_unchanged()


def test_it_grants_and_revokes_a_queue_privilege(admin_api, queue, operator_user):
    granted = admin_api.post(
        "/api/privileges/", {"queue": "ORDERS", "user": "oscar", "privilege": "ENQUEUE"}
    )
    listed = admin_api.get("/api/privileges/?username=oscar").json()["results"]
    revoked = admin_api.delete(f"/api/privileges/{granted.json()['id']}/")

    assert granted.status_code == 201, granted.content
    assert [(p["queue"], p["user"], p["privilege"]) for p in listed] == [
        ("ORDERS", "oscar", "ENQUEUE")
    ]
    assert revoked.status_code == 204
    assert not QueuePrivilege.objects.exists()


@pytest.fixture
def secure_queue(admin_user):
    qt = services.queue_table_create(
        user=admin_user, name="QT_SECURE", sort_order="enq_time", secure=True
    )
    return services.queue_create(user=admin_user, name="VAULT", queue_table=qt)


def test_a_secure_queue_refuses_an_operator_without_an_agent(operator_api, secure_queue, snapshot):
    before = snapshot()

    response = operator_api.post("/api/queues/VAULT/enqueue/", {"payload": 1})

    assert response.status_code == 403, response.content
    assert "agent" in response.json()["detail"]
    before.assert_unchanged()


def test_a_secure_queue_refuses_an_agent_user_without_the_privilege(
    admin_api, operator_api, secure_queue, snapshot
):
    admin_api.post("/api/agents/", {"name": "APP1"})
    admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})
    before = snapshot()

    response = operator_api.post("/api/queues/VAULT/enqueue/", {"payload": 1})

    assert response.status_code == 403, response.content
    assert "ENQUEUE" in response.json()["detail"]
    before.assert_unchanged()


def test_a_secure_queue_admits_an_agent_user_with_the_privilege(
    admin_api, operator_api, secure_queue
):
    admin_api.post("/api/agents/", {"name": "APP1"})
    admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})
    admin_api.post("/api/privileges/", {"queue": "VAULT", "user": "oscar", "privilege": "ENQUEUE"})

    enq = operator_api.post("/api/queues/VAULT/enqueue/", {"payload": 1, "sender": "APP1"})
    deq = operator_api.post("/api/queues/VAULT/dequeue/", {})

    assert enq.status_code == 201, enq.content
    assert deq.status_code == 403, deq.content  # ENQUEUE does not include DEQUEUE


def test_a_secure_queue_refuses_acting_as_someone_elses_agent(
    admin_api, operator_api, secure_queue
):
    admin_api.post("/api/agents/", {"name": "APP1"})
    admin_api.post("/api/agents/", {"name": "APP2"})
    admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})
    admin_api.post("/api/privileges/", {"queue": "VAULT", "user": "oscar", "privilege": "ALL"})

    response = operator_api.post("/api/queues/VAULT/enqueue/", {"payload": 1, "sender": "APP2"})

    assert response.status_code == 403, response.content
    assert "sender" in response.json()
