"""An administrator may change the topology and run every operator action."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry

# (method, path, body, expected status); {placeholders} come from the ``topology`` fixture.
WRITES = [
    ("post", "/api/queue-tables/", {"name": "QT_NEW", "sort_order": "priority"}, 201),
    ("patch", "/api/queue-tables/QT_ORDERS/", {"comment": "changed"}, 200),
    ("delete", "/api/queue-tables/QT_MULTI/", None, 204),
    ("post", "/api/queues/", {"name": "NEWQ", "queue_table": "QT_ORDERS"}, 201),
    ("patch", "/api/queues/ORDERS/", {"max_retries": 9}, 200),
    ("post", "/api/queues/ORDERS/stop/", {}, 200),
    ("post", "/api/queues/ORDERS/start/", {}, 200),
    ("post", "/api/queues/ORDERS/enqueue/", {"payload": {"n": 3}}, 201),
    ("post", "/api/queues/ORDERS/dequeue/", {"mode": "REMOVE"}, 200),
    ("post", "/api/queues/ORDERS/purge/", {"all": True}, 200),
    ("post", "/api/queues/{exception_queue}/replay/", {}, 200),
    ("post", "/api/subscribers/", {"queue": "EVENTS", "name": "AUDIT"}, 201),
    ("delete", "/api/subscribers/{subscriber}/", None, 204),
    ("post", "/api/agents/", {"name": "AGENT_NEW"}, 201),
    ("post", "/api/agents/AGENT_OSCAR/enable_access/", {"user": "alice"}, 200),
    ("post", "/api/agents/AGENT_OSCAR/disable_access/", {"user": "{user}"}, 200),
    ("delete", "/api/agents/AGENT_OSCAR/", None, 204),
    ("post", "/api/privileges/", {"queue": "ORDERS", "user": "oscar", "privilege": "ALL"}, 201),
    ("delete", "/api/privileges/{privilege}/", None, 204),
]


def _fill(value, topology):  # type: ignore[no-untyped-def]
    if isinstance(value, str):
        return value.format(**topology)
    if isinstance(value, dict):
        return {k: _fill(v, topology) for k, v in value.items()}
    return value


@pytest.mark.parametrize(
    ("method", "path", "body", "expected"), WRITES, ids=[f"{m} {p}" for m, p, _, _ in WRITES]
)
def test_administrator_may_make_every_change_and_it_is_logged(
    admin_api, topology, method, path, body, expected
):
    log_rows = ChangeLogEntry.objects.count()

    response = getattr(admin_api, method)(
        _fill(path, topology), _fill(body, topology), format="json"
    )

    assert response.status_code == expected, response.content
    # A dequeue is not an operator action on the topology, so it is the one write not logged.
    logged = 0 if path.endswith("/dequeue/") or path.endswith("/enqueue/") else 1
    assert ChangeLogEntry.objects.count() == log_rows + logged
