"""A monitor reads everything through the API, changes nothing, and may browse messages."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from queues.models import Message

READS = [
    "/api/",
    "/api/queue-tables/",
    "/api/queue-tables/QT_ORDERS/",
    "/api/queues/",
    "/api/queues/ORDERS/",
    "/api/queues/ORDERS/messages/",
    "/api/messages/",
    "/api/subscribers/",
    "/api/agents/",
    "/api/agents/AGENT_OSCAR/",
    "/api/privileges/",
    "/api/changelog/",
    "/api/status/dba_queue_tables/",
    "/api/status/dba_queues/",
    "/api/status/dba_aq_agent_privs/",
]

# (method, path, body); {placeholders} are filled from the ``topology`` fixture.
WRITES = [
    ("post", "/api/queue-tables/", {"name": "QT_NEW", "sort_order": "enq_time"}),
    ("patch", "/api/queue-tables/QT_ORDERS/", {"comment": "changed"}),
    ("put", "/api/queue-tables/QT_ORDERS/", {"comment": "changed"}),
    ("delete", "/api/queue-tables/QT_MULTI/", None),
    ("post", "/api/queues/", {"name": "NEWQ", "queue_table": "QT_ORDERS"}),
    ("patch", "/api/queues/ORDERS/", {"max_retries": 9}),
    ("delete", "/api/queues/ORDERS/", None),
    ("post", "/api/queues/ORDERS/start/", {}),
    ("post", "/api/queues/ORDERS/stop/", {}),
    ("post", "/api/queues/ORDERS/enqueue/", {"payload": {"n": 3}}),
    ("post", "/api/queues/ORDERS/enqueue/", {"messages": [{"payload": 1}, {"payload": 2}]}),
    ("post", "/api/queues/ORDERS/dequeue/", {"mode": "REMOVE"}),
    ("post", "/api/queues/ORDERS/dequeue/", {"mode": "LOCKED"}),
    (
        "post",
        "/api/queues/ORDERS/ack/",
        {"msgid": 1, "lock_token": "00000000-0000-0000-0000-000000000000"},
    ),
    (
        "post",
        "/api/queues/ORDERS/release/",
        {"msgid": 1, "lock_token": "00000000-0000-0000-0000-000000000000"},
    ),
    ("post", "/api/queues/ORDERS/purge/", {"all": True}),
    ("post", "/api/queues/{exception_queue}/replay/", {}),
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


@pytest.mark.parametrize("path", READS)
def test_monitor_can_read_every_endpoint(monitor_api, topology, path):
    response = monitor_api.get(path)

    assert response.status_code == 200, response.content


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_monitor_is_refused_every_write_and_nothing_changes(
    monitor_api, topology, snapshot, method, path, body
):
    before = snapshot()

    response = getattr(monitor_api, method)(
        _fill(path, topology), _fill(body, topology), format="json"
    )

    assert response.status_code == 403, response.content
    before.assert_unchanged()


def test_monitor_can_browse_messages_without_consuming_them(monitor_api, topology, queue):
    before = list(Message.objects.filter(queue=queue).values_list("id", "state", "attempts"))
    log_rows = ChangeLogEntry.objects.count()

    response = monitor_api.post(
        "/api/queues/ORDERS/dequeue/", {"mode": "BROWSE", "batch": 10}, format="json"
    )

    assert response.status_code == 200, response.content
    assert [m["payload"] for m in response.json()["messages"]] == [{"n": 1}, {"n": 2}]
    assert list(Message.objects.filter(queue=queue).values_list("id", "state", "attempts")) == (
        before
    )
    assert ChangeLogEntry.objects.count() == log_rows


def test_monitor_refusal_says_the_role_does_not_allow_it(monitor_api, topology):
    response = monitor_api.post("/api/queues/ORDERS/purge/", {"all": True}, format="json")

    assert response.status_code == 403
    assert "role" in response.json()["detail"].lower()
