"""Roles in the services: a monitor only reads, an operator runs things but changes no topology,
an administrator does everything. A refused call changes nothing and logs nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser

from core.exceptions import Forbidden
from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Agent, Message, Queue, QueuePrivilege, QueueTable, Subscriber

from .helpers import make_queue, payloads, put, take

Call = Callable[[Any, Queue], Any]

CONFIGURE: dict[str, Call] = {
    "queue_table_create": lambda u, q: services.queue_table_create(
        user=u, name="QT_NEW", sort_order="enq_time"
    ),
    "queue_table_update": lambda u, q: services.queue_table_update(
        user=u, queue_table=q.queue_table, comment="x"
    ),
    "queue_table_delete": lambda u, q: services.queue_table_delete(
        user=u, queue_table=q.queue_table
    ),
    "queue_create": lambda u, q: services.queue_create(
        user=u, name="Q_NEW", queue_table=q.queue_table
    ),
    "queue_update": lambda u, q: services.queue_update(user=u, queue=q, max_retries=1),
    "queue_delete": lambda u, q: services.queue_delete(user=u, queue=q),
    "subscriber_add": lambda u, q: services.subscriber_add(user=u, queue=q, name="NEW"),
    "subscriber_remove": lambda u, q: services.subscriber_remove(
        user=u, subscriber=q.subscribers.get()
    ),
    "agent_create": lambda u, q: services.agent_create(user=u, name="AG_NEW"),
    "agent_delete": lambda u, q: services.agent_delete(user=u, agent=Agent.objects.get()),
    "agent_enable_db_access": lambda u, q: services.agent_enable_db_access(
        user=u, agent=Agent.objects.get(), db_user=u
    ),
    "queue_privilege_grant": lambda u, q: services.queue_privilege_grant(
        user=u, queue=q, grantee=u, privilege="ALL"
    ),
    "queue_privilege_revoke": lambda u, q: services.queue_privilege_revoke(
        user=u, grant=QueuePrivilege.objects.get()
    ),
}

OPERATE: dict[str, Call] = {
    "queue_stop": lambda u, q: services.queue_stop(user=u, queue=q),
    "queue_start": lambda u, q: services.queue_start(user=u, queue=q),
    "queue_purge": lambda u, q: services.queue_purge(
        user=u, queue=q, condition=engine.PurgeCondition()
    ),
    "exception_queue_replay": lambda u, q: services.exception_queue_replay(
        user=u, queue=q.exception_queue
    ),
    "message_enqueue": lambda u, q: put(q, "x", user=u),
    "message_dequeue": lambda u, q: take(q, user=u, consumer_name="SUB"),
    "message_dequeue_locked": lambda u, q: take(q, user=u, consumer_name="SUB", mode=engine.LOCKED),
    "message_process": lambda u, q: services.message_process(
        user=u,
        queue=q,
        handler=lambda m: None,
        request=services.DequeueRequest(consumer_name="SUB"),
    ),
}


@pytest.fixture
def world(admin_user, operator_user):
    """A multi-consumer queue with a subscriber, a message, an agent and a grant."""
    queue = make_queue(admin_user, "WORLD", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="SUB")
    put(queue, "m", user=admin_user)
    agent = services.agent_create(user=admin_user, name="AG")
    services.agent_enable_db_access(user=admin_user, agent=agent, db_user=operator_user)
    services.queue_privilege_grant(
        user=admin_user, queue=queue, grantee=operator_user, privilege="ENQUEUE"
    )
    queue.refresh_from_db()
    return queue


def snapshot() -> dict[str, Any]:
    return {
        "queue_tables": list(QueueTable.objects.values_list("name", "comment")),
        "queues": list(
            Queue.objects.values_list("name", "max_retries", "enqueue_enabled", "dequeue_enabled")
        ),
        "messages": list(Message.objects.values_list("id", "state", "pending_consumers")),
        "subscribers": list(Subscriber.objects.values_list("name", flat=True)),
        "agents": list(Agent.objects.values_list("name", flat=True)),
        "grants": list(QueuePrivilege.objects.values_list("privilege", flat=True)),
        "log": ChangeLogEntry.objects.count(),
    }


@pytest.mark.parametrize("verb", sorted({**CONFIGURE, **OPERATE}))
def test_a_monitor_is_refused_every_change_and_nothing_changes(monitor_user, world, verb):
    call = {**CONFIGURE, **OPERATE}[verb]
    before = snapshot()
    with pytest.raises(Forbidden) as err:
        call(monitor_user, world)
    assert err.value.status_code == 403
    assert snapshot() == before


@pytest.mark.parametrize("verb", sorted(CONFIGURE))
def test_an_operator_is_refused_topology_changes_and_nothing_changes(operator_user, world, verb):
    before = snapshot()
    with pytest.raises(Forbidden):
        CONFIGURE[verb](operator_user, world)
    assert snapshot() == before


@pytest.mark.parametrize("verb", sorted(OPERATE))
def test_an_operator_may_run_every_operator_action(operator_user, world, verb):
    OPERATE[verb](operator_user, world)


@pytest.mark.parametrize("verb", sorted(CONFIGURE))
def test_an_administrator_may_change_the_topology(admin_user, world, verb):
    if verb in ("queue_table_delete", "queue_delete"):
        services.queue_purge(user=admin_user, queue=world, condition=engine.PurgeCondition())
    CONFIGURE[verb](admin_user, world)


def test_a_monitor_may_browse(monitor_user, world):
    assert payloads(take(world, user=monitor_user, consumer_name="SUB", mode=engine.BROWSE)) == [
        "m"
    ]


@pytest.mark.parametrize("make_user", ["anonymous", "inactive", "no_group"])
def test_users_without_a_usable_role_are_refused_even_reads(make_user, world, django_user_model):
    if make_user == "anonymous":
        user = AnonymousUser()
    else:
        user = django_user_model.objects.create_user(username=make_user, password="pw")
        if make_user == "inactive":
            user.is_active = False
            user.save()
    before = snapshot()
    with pytest.raises(Forbidden):
        take(world, user=user, consumer_name="SUB", mode=engine.BROWSE)
    with pytest.raises(Forbidden):
        put(world, "x", user=user)
    assert snapshot() == before
