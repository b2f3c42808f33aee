"""Every topology change and operator action made through the API writes exactly one change-log
entry with the user, the time, the object and its before and after values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.utils import timezone

from core.models import ChangeLogEntry
from queues import services
from queues.models import Queue, QueuePrivilege, Subscriber


@dataclass
class Case:
    method: str
    path: str
    body: dict | None
    action: str
    verb: str
    object_type: str
    object_repr: str
    before: Callable[[Any], bool] = field(default=lambda b: b is None)
    after: Callable[[Any], bool] = field(default=lambda a: a is None)


def _path(case: Case, topology: dict) -> str:
    return case.path.format(**topology)


CASES = {
    "queue table create": Case(
        "post",
        "/api/queue-tables/",
        {"name": "QT_NEW", "sort_order": "priority", "comment": "new"},
        "create",
        "queue_table_create",
        "queues.queuetable",
        "QT_NEW",
        after=lambda a: (a["name"], a["sort_order"], a["comment"]) == ("QT_NEW", "priority", "new"),
    ),
    "queue table update": Case(
        "patch",
        "/api/queue-tables/QT_ORDERS/",
        {"comment": "changed"},
        "update",
        "queue_table_update",
        "queues.queuetable",
        "QT_ORDERS",
        before=lambda b: b["comment"] == "",
        after=lambda a: a["comment"] == "changed",
    ),
    "queue table delete": Case(
        "delete",
        "/api/queue-tables/QT_EMPTY/",
        None,
        "delete",
        "queue_table_delete",
        "queues.queuetable",
        "QT_EMPTY",
        before=lambda b: b["name"] == "QT_EMPTY" and b["sort_order"] == "enq_time",
    ),
    "queue create": Case(
        "post",
        "/api/queues/",
        {"name": "NEWQ", "queue_table": "QT_ORDERS", "max_retries": 3},
        "create",
        "queue_create",
        "queues.queue",
        "NEWQ",
        after=lambda a: (a["name"], a["max_retries"]) == ("NEWQ", 3),
    ),
    "queue update": Case(
        "patch",
        "/api/queues/ORDERS/",
        {"max_retries": 9, "comment": "busy"},
        "update",
        "queue_update",
        "queues.queue",
        "ORDERS",
        before=lambda b: (b["max_retries"], b["comment"]) == (5, ""),
        after=lambda a: (a["max_retries"], a["comment"]) == (9, "busy"),
    ),
    "queue delete": Case(
        "delete",
        "/api/queues/SPARE/",
        None,
        "delete",
        "queue_delete",
        "queues.queue",
        "SPARE",
        before=lambda b: b["name"] == "SPARE",
    ),
    "queue stop": Case(
        "post",
        "/api/queues/ORDERS/stop/",
        {"what": "dequeue"},
        "action",
        "queue_stop",
        "queues.queue",
        "ORDERS",
        before=lambda b: b == {"enqueue_enabled": True, "dequeue_enabled": True},
        after=lambda a: a == {"enqueue_enabled": True, "dequeue_enabled": False},
    ),
    "queue start": Case(
        "post",
        "/api/queues/STOPPED/start/",
        {},
        "action",
        "queue_start",
        "queues.queue",
        "STOPPED",
        before=lambda b: b == {"enqueue_enabled": False, "dequeue_enabled": False},
        after=lambda a: a == {"enqueue_enabled": True, "dequeue_enabled": True},
    ),
    "queue purge": Case(
        "post",
        "/api/queues/ORDERS/purge/",
        {"states": ["READY"]},
        "action",
        "queue_purge",
        "queues.queue",
        "ORDERS",
        before=lambda b: b["condition"]["states"] == ["READY"],
        after=lambda a: a == {"removed": 2},
    ),
    "exception queue replay": Case(
        "post",
        "/api/queues/{exception_queue}/replay/",
        {},
        "action",
        "exception_queue_replay",
        "queues.queue",
        "{exception_queue}",
        before=lambda b: b == {"ids": "all"},
        after=lambda a: a == {"replayed": 1},
    ),
    "subscriber add": Case(
        "post",
        "/api/subscribers/",
        {"queue": "EVENTS", "name": "AUDIT"},
        "create",
        "subscriber_add",
        "queues.subscriber",
        "AUDIT on EVENTS",
        after=lambda a: a["name"] == "AUDIT",
    ),
    "subscriber remove": Case(
        "delete",
        "/api/subscribers/{subscriber}/",
        None,
        "delete",
        "subscriber_remove",
        "queues.subscriber",
        "BILLING",
        before=lambda b: b["name"] == "BILLING",
    ),
    "agent create": Case(
        "post",
        "/api/agents/",
        {"name": "AGENT_NEW", "address": "app1"},
        "create",
        "agent_create",
        "queues.agent",
        "AGENT_NEW",
        after=lambda a: (a["name"], a["address"]) == ("AGENT_NEW", "app1"),
    ),
    "agent delete": Case(
        "delete",
        "/api/agents/AGENT_OSCAR/",
        None,
        "delete",
        "agent_delete",
        "queues.agent",
        "AGENT_OSCAR",
        before=lambda b: b["name"] == "AGENT_OSCAR",
    ),
    "agent enable access": Case(
        "post",
        "/api/agents/AGENT_OSCAR/enable_access/",
        {"user": "alice"},
        "create",
        "agent_enable_db_access",
        "queues.agentuser",
        "AGENT_OSCAR ↔ alice",
        after=lambda a: a == {"agent": "AGENT_OSCAR", "user": "alice"},
    ),
    "agent disable access": Case(
        "post",
        "/api/agents/AGENT_OSCAR/disable_access/",
        {"user": "oscar"},
        "delete",
        "agent_disable_db_access",
        "queues.agentuser",
        "AGENT_OSCAR ↔ oscar",
        before=lambda b: b == {"agent": "AGENT_OSCAR", "user": "oscar"},
    ),
    "privilege grant": Case(
        "post",
        "/api/privileges/",
        {"queue": "ORDERS", "user": "oscar", "privilege": "DEQUEUE"},
        "create",
        "queue_privilege_grant",
        "queues.queueprivilege",
        "DEQUEUE on ORDERS to oscar",
        after=lambda a: a == {"queue": "ORDERS", "user": "oscar", "privilege": "DEQUEUE"},
    ),
    "privilege revoke": Case(
        "delete",
        "/api/privileges/{privilege}/",
        None,
        "delete",
        "queue_privilege_revoke",
        "queues.queueprivilege",
        "ENQUEUE on ORDERS to oscar",
        before=lambda b: b == {"queue": "ORDERS", "user": "oscar", "privilege": "ENQUEUE"},
    ),
}


@pytest.fixture
def more_topology(admin_user, topology, queue_table) -> dict:
    services.queue_table_create(user=admin_user, name="QT_EMPTY", sort_order="enq_time")
    services.queue_create(user=admin_user, name="SPARE", queue_table=queue_table)
    services.queue_create(
        user=admin_user,
        name="STOPPED",
        queue_table=queue_table,
        enqueue_enabled=False,
        dequeue_enabled=False,
    )
    return topology


@pytest.mark.parametrize("name", list(CASES))
def test_each_change_writes_one_entry_with_user_time_object_and_values(
    admin_api, admin_user, more_topology, name
):
    case = CASES[name]
    last = ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
    started = timezone.now()

    response = getattr(admin_api, case.method)(_path(case, more_topology), case.body, format="json")

    assert response.status_code < 300, response.content
    [entry] = ChangeLogEntry.objects.filter(id__gt=last)
    assert (entry.user, entry.username) == (admin_user, "alice")
    assert started <= entry.time <= timezone.now()
    assert (entry.action, entry.verb, entry.object_type) == (
        case.action,
        case.verb,
        case.object_type,
    )
    assert entry.object_repr == case.object_repr.replace(
        "{exception_queue}", more_topology["exception_queue"]
    )
    assert case.before(entry.before), entry.before
    assert case.after(entry.after), entry.after


def test_a_logged_object_keeps_its_id_after_deletion(admin_api, more_topology):
    spare = Queue.objects.get(name="SPARE").pk

    admin_api.delete("/api/queues/SPARE/")

    entry = ChangeLogEntry.objects.get(verb="queue_delete")
    assert entry.object_id == str(spare)
    assert entry.before["id"] == spare


def test_subscriber_and_privilege_rows_are_really_gone_after_their_logged_delete(
    admin_api, more_topology
):
    admin_api.delete(f"/api/subscribers/{more_topology['subscriber']}/")
    admin_api.delete(f"/api/privileges/{more_topology['privilege']}/")

    assert not Subscriber.objects.filter(pk=more_topology["subscriber"]).exists()
    assert not QueuePrivilege.objects.filter(pk=more_topology["privilege"]).exists()
    assert ChangeLogEntry.objects.filter(action="delete").count() == 2
