"""The console's write pages, with a valid body each, shared by the per-role page tests."""

from __future__ import annotations

from queues.models import Agent, Queue, QueuePrivilege, QueueTable, Subscriber

TOPOLOGY_POSTS = [
    ("/queues/tables/add/", {"name": "QT_NEW", "sort_order": "enq_time", "payload_type": "ANY"}),
    ("/queues/tables/{qt_orders}/edit/", {"comment": "changed"}),
    ("/queues/tables/{qt_multi}/delete/", {}),
    (
        "/queues/add/",
        {
            "name": "NEWQ",
            "queue_table": "{qt_orders}",
            "kind": "NORMAL_QUEUE",
            "max_retries": 5,
            "retry_delay": 0,
            "retention_time": 0,
            "enqueue_enabled": "on",
            "dequeue_enabled": "on",
        },
    ),
    ("/queues/{orders}/edit/", {"max_retries": 9, "retry_delay": 0, "retention_time": 0}),
    ("/queues/{events}/delete/", {}),
    ("/queues/{events}/subscribers/add/", {"name": "AUDIT"}),
    ("/queues/subscribers/{subscriber}/remove/", {}),
    ("/queues/agents/add/", {"name": "AGENT_NEW"}),
    ("/queues/agents/{agent}/delete/", {}),
    ("/queues/agents/access/enable/", {"agent": "{agent}", "user": "{alice}"}),
    ("/queues/agents/access/disable/", {"agent": "{agent}", "user": "{oscar}"}),
    ("/queues/privileges/grant/", {"queue": "{orders}", "user": "{alice}", "privilege": "ALL"}),
    ("/queues/privileges/{privilege}/revoke/", {}),
]

OPERATOR_POSTS = [
    ("/queues/{orders}/stop/", {"what": "both"}),
    ("/queues/{orders}/start/", {"what": "both"}),
    (
        "/queues/{orders}/enqueue/",
        {
            "payload": '{{"n": 3}}',
            "kind": "USER",
            "priority": 1,
            "delay": 0,
            "visibility": "ON_COMMIT",
        },
    ),
    (
        "/queues/{orders}/dequeue/",
        {"mode": "REMOVE", "navigation": "FIRST_MESSAGE", "batch": 1, "wait": 0},
    ),
    (
        "/queues/{orders}/dequeue/",
        {"mode": "LOCKED", "navigation": "FIRST_MESSAGE", "batch": 1, "wait": 0},
    ),
    ("/queues/{orders}/purge/", {"confirm": "ORDERS"}),
    ("/queues/{exception_queue}/replay/", {"ids": ""}),
]


def ids(topology: dict) -> dict[str, int]:
    """Primary keys of the ``topology`` fixture's objects, for page URLs and form values."""
    from django.contrib.auth.models import User

    return {
        "qt_orders": QueueTable.objects.get(name="QT_ORDERS").pk,
        "qt_multi": QueueTable.objects.get(name="QT_MULTI").pk,
        "orders": Queue.objects.get(name="ORDERS").pk,
        "events": Queue.objects.get(name="EVENTS").pk,
        "exception_queue": Queue.objects.get(name=topology["exception_queue"]).pk,
        "subscriber": Subscriber.objects.get(name="BILLING").pk,
        "agent": Agent.objects.get(name="AGENT_OSCAR").pk,
        "privilege": QueuePrivilege.objects.get().pk,
        "alice": User.objects.get(username="alice").pk,
        "oscar": User.objects.get(username="oscar").pk,
    }


def fill(value, keys: dict):  # type: ignore[no-untyped-def]
    if isinstance(value, str):
        return value.format(**keys)
    if isinstance(value, dict):
        return {k: fill(v, keys) for k, v in value.items()}
    return value


def label(case: tuple) -> str:
    return case[0] + (f" {case[1]['mode']}" if "mode" in case[1] else "")
