"""An operator starts, stops, enqueues, dequeues, purges and replays, but changes no topology."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from queues.models import Message, Queue

TOPOLOGY_WRITES = [
    ("post", "/api/queue-tables/", {"name": "QT_NEW", "sort_order": "enq_time"}),
    ("patch", "/api/queue-tables/QT_ORDERS/", {"comment": "changed"}),
    ("delete", "/api/queue-tables/QT_MULTI/", None),
    ("post", "/api/queues/", {"name": "NEWQ", "queue_table": "QT_ORDERS"}),
    ("patch", "/api/queues/ORDERS/", {"max_retries": 9}),
    ("put", "/api/queues/ORDERS/", {"max_retries": 9}),
    ("delete", "/api/queues/RETRY_ONCE/", None),
    ("post", "/api/subscribers/", {"queue": "EVENTS", "name": "AUDIT"}),
    ("delete", "/api/subscribers/{subscriber}/", None),
    ("post", "/api/agents/", {"name": "AGENT_NEW"}),
    ("delete", "/api/agents/AGENT_OSCAR/", None),
    ("post", "/api/agents/AGENT_OSCAR/enable_access/", {"user": "alice"}),
    ("post", "/api/agents/AGENT_OSCAR/disable_access/", {"user": "{user}"}),
    ("post", "/api/privileges/", {"queue": "ORDERS", "user": "mona", "privilege": "ALL"}),
    ("delete", "/api/privileges/{privilege}/", None),
]


def _fill(value, topology):  # type: ignore[no-untyped-def]
    if isinstance(value, str):
        return value.format(**topology)
    if isinstance(value, dict):
        return {k: _fill(v, topology) for k, v in value.items()}
    return value


@pytest.mark.parametrize(
    ("method", "path", "body"), TOPOLOGY_WRITES, ids=[f"{m} {p}" for m, p, _ in TOPOLOGY_WRITES]
)
def test_operator_is_refused_topology_changes_and_nothing_changes(
    operator_api, topology, snapshot, method, path, body
):
    before = snapshot()

    response = getattr(operator_api, method)(
        _fill(path, topology), _fill(body, topology), format="json"
    )

    assert response.status_code == 403, response.content
    before.assert_unchanged()


def test_operator_can_stop_and_start_a_queue(operator_api, topology, queue):
    stopped = operator_api.post("/api/queues/ORDERS/stop/", {"what": "enqueue"}, format="json")
    queue.refresh_from_db()
    assert stopped.status_code == 200, stopped.content
    assert (queue.enqueue_enabled, queue.dequeue_enabled) == (False, True)

    started = operator_api.post("/api/queues/ORDERS/start/", {}, format="json")
    queue.refresh_from_db()
    assert started.status_code == 200, started.content
    assert (queue.enqueue_enabled, queue.dequeue_enabled) == (True, True)
    assert started.json()["enqueue_enabled"] is True


def test_operator_can_enqueue_and_dequeue(operator_api, topology, queue):
    enq = operator_api.post("/api/queues/ORDERS/enqueue/", {"payload": {"n": 3}}, format="json")
    assert enq.status_code == 201, enq.content

    deq = operator_api.post("/api/queues/ORDERS/dequeue/", {"batch": 5}, format="json")

    assert deq.status_code == 200, deq.content
    assert [m["payload"] for m in deq.json()["messages"]] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert not Message.objects.filter(queue=queue).exists()


def test_operator_can_lock_and_acknowledge(operator_api, topology, queue):
    got = operator_api.post("/api/queues/ORDERS/dequeue/", {"mode": "LOCKED"}, format="json")
    [msg] = got.json()["messages"]

    ack = operator_api.post(
        "/api/queues/ORDERS/ack/",
        {"msgid": msg["id"], "lock_token": msg["lock_token"]},
        format="json",
    )

    assert ack.status_code == 200, ack.content
    assert not Message.objects.filter(pk=msg["id"]).exists()


def test_operator_can_purge(operator_api, topology, queue):
    response = operator_api.post("/api/queues/ORDERS/purge/", {"all": True}, format="json")

    assert response.status_code == 200, response.content
    assert response.json() == {"count": 2}
    assert not Message.objects.filter(queue=queue).exists()


def test_operator_can_replay_from_the_exception_queue(operator_api, topology):
    response = operator_api.post(f"/api/queues/{topology['exception_queue']}/replay/", {})

    assert response.status_code == 200, response.content
    assert response.json() == {"count": 1}
    moved = Message.objects.get(pk=topology["expired_id"])
    assert (moved.queue.name, moved.state, moved.replayed) == ("RETRY_ONCE", "READY", True)


def test_operator_actions_are_logged_under_the_operators_name(operator_api, topology):
    operator_api.post("/api/queues/ORDERS/stop/", {}, format="json")
    operator_api.post("/api/queues/ORDERS/purge/", {"all": True}, format="json")

    verbs = list(
        ChangeLogEntry.objects.filter(username="oscar")
        .order_by("id")
        .values_list("verb", flat=True)
    )
    assert verbs == ["queue_stop", "queue_purge"]
    assert Queue.objects.get(name="ORDERS").enqueue_enabled is False
