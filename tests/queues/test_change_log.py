"""Every topology change and operator action writes exactly one change-log entry, with the user,
the object and before/after values, in the same transaction as the change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Agent, QueuePrivilege, Subscriber

from .helpers import make_queue, put


def one_entry(action: Callable[[], Any]) -> ChangeLogEntry:
    before = set(ChangeLogEntry.objects.values_list("pk", flat=True))
    action()
    new = list(ChangeLogEntry.objects.exclude(pk__in=before))
    assert len(new) == 1, [e.verb for e in new]
    return new[0]


def test_queue_table_create_logs_one_entry_with_the_new_values(admin_user):
    entry = one_entry(
        lambda: services.queue_table_create(user=admin_user, name="QT1", sort_order="priority")
    )
    assert (entry.action, entry.verb, entry.object_type) == (
        "create",
        "queue_table_create",
        "queues.queuetable",
    )
    assert entry.user == admin_user
    assert entry.username == "alice"
    assert entry.object_repr == "QT1"
    assert entry.before is None
    assert entry.after["sort_order"] == "priority"


def test_queue_table_update_logs_before_and_after(admin_user, queue_table):
    entry = one_entry(
        lambda: services.queue_table_update(
            user=admin_user, queue_table=queue_table, comment="new words"
        )
    )
    assert entry.verb == "queue_table_update"
    assert (entry.before["comment"], entry.after["comment"]) == ("", "new words")


def test_queue_create_update_and_delete_each_log_one_entry(admin_user, queue_table):
    created = one_entry(
        lambda: services.queue_create(user=admin_user, name="Q1", queue_table=queue_table)
    )
    assert created.verb == "queue_create"
    queue = queue_table.queues.get(name="Q1")
    updated = one_entry(lambda: services.queue_update(user=admin_user, queue=queue, max_retries=9))
    assert (updated.before["max_retries"], updated.after["max_retries"]) == (5, 9)
    deleted = one_entry(lambda: services.queue_delete(user=admin_user, queue=queue))
    assert (deleted.action, deleted.verb, deleted.object_repr) == ("delete", "queue_delete", "Q1")
    assert deleted.object_id == str(queue.pk)
    assert deleted.before["name"] == "Q1"


def test_queue_stop_and_start_log_the_enabled_flags(operator_user, queue):
    stopped = one_entry(lambda: services.queue_stop(user=operator_user, queue=queue))
    assert stopped.action == "action"
    assert stopped.before == {"enqueue_enabled": True, "dequeue_enabled": True}
    assert stopped.after == {"enqueue_enabled": False, "dequeue_enabled": False}
    started = one_entry(
        lambda: services.queue_start(user=operator_user, queue=queue, dequeue=False)
    )
    assert started.after == {"enqueue_enabled": True, "dequeue_enabled": False}
    assert started.username == "oscar"


def test_queue_table_delete_logs_one_entry(admin_user, queue_table, queue):
    entry = one_entry(lambda: services.queue_table_delete(user=admin_user, queue_table=queue_table))
    assert (entry.verb, entry.object_repr) == ("queue_table_delete", "QT_ORDERS")


def test_subscriber_add_and_remove_each_log_one_entry(admin_user):
    queue = make_queue(admin_user, "PUBSUB", multiple_consumers=True)
    added = one_entry(lambda: services.subscriber_add(user=admin_user, queue=queue, name="A"))
    assert added.verb == "subscriber_add"
    sub = Subscriber.objects.get(name="A")
    removed = one_entry(lambda: services.subscriber_remove(user=admin_user, subscriber=sub))
    assert removed.verb == "subscriber_remove"


def test_agent_and_privilege_services_each_log_one_entry(admin_user, operator_user, queue):
    assert one_entry(lambda: services.agent_create(user=admin_user, name="AG")).verb == (
        "agent_create"
    )
    agent = Agent.objects.get(name="AG")
    assert (
        one_entry(
            lambda: services.agent_enable_db_access(
                user=admin_user, agent=agent, db_user=operator_user
            )
        ).verb
        == "agent_enable_db_access"
    )
    assert one_entry(
        lambda: services.queue_privilege_grant(
            user=admin_user, queue=queue, grantee=operator_user, privilege="ENQUEUE"
        )
    ).after == {"queue": "ORDERS", "user": "oscar", "privilege": "ENQUEUE"}
    grant = QueuePrivilege.objects.get()
    assert (
        one_entry(lambda: services.queue_privilege_revoke(user=admin_user, grant=grant)).verb
        == "queue_privilege_revoke"
    )
    assert (
        one_entry(
            lambda: services.agent_disable_db_access(
                user=admin_user, agent=agent, db_user=operator_user
            )
        ).verb
        == "agent_disable_db_access"
    )
    assert one_entry(lambda: services.agent_delete(user=admin_user, agent=agent)).verb == (
        "agent_delete"
    )


def test_granting_what_is_already_granted_changes_and_logs_nothing(
    admin_user, operator_user, queue
):
    services.queue_privilege_grant(
        user=admin_user, queue=queue, grantee=operator_user, privilege="ALL"
    )
    before = ChangeLogEntry.objects.count()
    services.queue_privilege_grant(
        user=admin_user, queue=queue, grantee=operator_user, privilege="ALL"
    )
    assert ChangeLogEntry.objects.count() == before
    assert QueuePrivilege.objects.count() == 1


def test_purge_and_replay_each_log_one_entry(operator_user, admin_user, queue):
    put(queue, "m", user=operator_user)
    entry = one_entry(
        lambda: services.queue_purge(
            user=operator_user, queue=queue, condition=engine.PurgeCondition()
        )
    )
    assert entry.after == {"removed": 1}
    queue.refresh_from_db()
    entry = one_entry(
        lambda: services.exception_queue_replay(user=operator_user, queue=queue.exception_queue)
    )
    assert entry.after == {"replayed": 0}


def test_internal_callers_are_logged_without_a_user(queue):
    entry = one_entry(lambda: services.queue_stop(user=None, queue=queue))
    assert entry.user is None
    assert entry.username == ""


@pytest.mark.parametrize(
    "failing",
    [
        lambda u, q: services.queue_create(user=u, name="bad name", queue_table=q.queue_table),
        lambda u, q: services.queue_create(user=u, name="ORDERS", queue_table=q.queue_table),
        lambda u, q: services.queue_update(user=u, queue=q, retry_delay=-1),
        lambda u, q: services.queue_table_create(user=u, name="QT2", sort_order="random"),
        lambda u, q: services.queue_table_update(user=u, queue_table=q.queue_table, secure=True),
        lambda u, q: services.subscriber_add(user=u, queue=q, name="A"),
        lambda u, q: services.exception_queue_replay(user=u, queue=q, ids=[1]),
        lambda u, q: services.queue_privilege_grant(user=u, queue=q, grantee=u, privilege="X"),
    ],
)
def test_a_failed_service_writes_no_change_log_entry(admin_user, queue, failing):
    before = ChangeLogEntry.objects.count()
    with pytest.raises(Exception):  # noqa: B017 - each case raises its own domain error
        failing(admin_user, queue)
    assert ChangeLogEntry.objects.count() == before


def test_a_queue_table_create_that_fails_half_way_leaves_neither_the_table_nor_a_log_entry(
    admin_user, queue_table
):
    # The table saves, then its default exception queue's name collides: all of it rolls back.
    from core.exceptions import Conflict
    from queues.models import QueueTable

    services.queue_create(user=admin_user, name="AQ$_QT_NEW_E", queue_table=queue_table)
    before = ChangeLogEntry.objects.count()
    with pytest.raises(Conflict):
        services.queue_table_create(user=admin_user, name="QT_NEW", sort_order="enq_time")
    assert not QueueTable.objects.filter(name="QT_NEW").exists()
    assert ChangeLogEntry.objects.count() == before
