"""DBMS_STREAMS_ADM.SET_UP_QUEUE: one call creates the Streams queue table (commit-time,
transactional, secure, multi-consumer, ANY), the queue, and the queue user's agent, access and
privileges; a rerun for another user only configures that user; a refusal leaves nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from core.exceptions import Conflict, DomainError
from core.models import ChangeLogEntry
from queues import services
from queues.models import Agent, AgentUser, Queue, QueuePrivilege, QueueTable


def _grants(user: User, queue: Queue) -> set[str]:
    return set(
        QueuePrivilege.objects.filter(user=user, queue=queue).values_list("privilege", flat=True)
    )


@pytest.fixture
def hr(db) -> User:
    return User.objects.create_user(username="hr", password="pw-hr")


@pytest.fixture
def oe(db) -> User:
    return User.objects.create_user(username="oe", password="pw-oe")


def test_a_fresh_set_up_creates_everything_streams_does(admin_user, hr):
    done = services.set_up_queue(
        user=admin_user,
        queue_table="STRM_QT",
        queue_name="STRM_Q",
        queue_user="hr",
        storage_clause="TABLESPACE users",
        comment="Streams queue",
    )
    qt = QueueTable.objects.get(name="STRM_QT")
    assert (qt.sort_order, qt.message_grouping, qt.payload_type) == (
        "commit_time",
        "TRANSACTIONAL",
        "ANY",
    )
    assert qt.multiple_consumers and qt.secure
    queue = Queue.objects.get(name="STRM_Q")
    assert queue.queue_table == qt and queue.enqueue_enabled and queue.dequeue_enabled
    assert queue.comment == "Streams queue"
    agent = Agent.objects.get(name__iexact="hr")
    assert list(agent.users.all()) == [hr]
    assert _grants(hr, queue) == {"ENQUEUE", "DEQUEUE"}
    assert done.queue_table_created and done.queue_created and done.agent_created
    verbs = set(ChangeLogEntry.objects.values_list("verb", flat=True))
    assert {
        "queue_table_create",
        "queue_create",
        "agent_create",
        "agent_enable_db_access",
        "queue_privilege_grant",
    } <= verbs


def test_the_defaults_are_oracles_names_and_no_user_is_configured_without_one(admin_user):
    done = services.set_up_queue(user=admin_user)
    assert (done.queue_table.name, done.queue.name, done.agent) == (
        "STREAMS_QUEUE_TABLE",
        "STREAMS_QUEUE",
        None,
    )
    assert not AgentUser.objects.exists() and not QueuePrivilege.objects.exists()


def test_a_rerun_for_another_user_only_configures_that_user(admin_user, hr, oe):
    services.set_up_queue(user=admin_user, queue_table="QT", queue_name="Q", queue_user="hr")
    tables, queues = QueueTable.objects.count(), Queue.objects.count()
    again = services.set_up_queue(
        user=admin_user, queue_table="QT", queue_name="Q", queue_user="oe"
    )
    assert not again.queue_table_created and not again.queue_created and again.agent_created
    assert (QueueTable.objects.count(), Queue.objects.count()) == (tables, queues)
    queue = Queue.objects.get(name="Q")
    assert _grants(oe, queue) == {"ENQUEUE", "DEQUEUE"} == _grants(hr, queue)
    assert list(Agent.objects.get(name__iexact="oe").users.all()) == [oe]


def test_an_existing_queue_table_keeps_its_ordering(admin_user, hr):
    services.queue_table_create(
        user=admin_user, name="OLD_QT", sort_order="priority", multiple_consumers=True
    )
    done = services.set_up_queue(
        user=admin_user, queue_table="OLD_QT", queue_name="NEW_Q", queue_user="hr"
    )
    assert not done.queue_table_created
    assert QueueTable.objects.get(name="OLD_QT").sort_order == "priority"
    assert done.queue.queue_table.name == "OLD_QT"


def test_an_agent_of_the_users_name_is_reused_when_it_is_that_users_alone(admin_user, hr):
    agent = services.agent_create(user=admin_user, name="HR")
    services.agent_enable_db_access(user=admin_user, agent=agent, db_user=hr)
    done = services.set_up_queue(user=admin_user, queue_table="QT", queue_name="Q", queue_user="hr")
    assert done.agent == agent and not done.agent_created
    assert Agent.objects.count() == 1


def test_an_agent_of_the_users_name_used_by_another_user_is_refused_and_nothing_is_created(
    admin_user, hr, oe
):
    agent = services.agent_create(user=admin_user, name="HR")
    services.agent_enable_db_access(user=admin_user, agent=agent, db_user=oe)
    with pytest.raises(Conflict) as err:
        services.set_up_queue(user=admin_user, queue_table="QT", queue_name="Q", queue_user="hr")
    assert err.value.field == "queue_user" and "oe" in str(err.value)
    assert not QueueTable.objects.filter(name="QT").exists()
    assert not Queue.objects.filter(name="Q").exists()
    assert list(agent.users.all()) == [oe]


def test_user_names_are_case_sensitive_so_the_grants_never_go_to_a_namesake(admin_user, hr):
    other = User.objects.create_user(username="HR", password="pw")
    agent = services.agent_create(user=admin_user, name="HR")
    services.agent_enable_db_access(user=admin_user, agent=agent, db_user=hr)
    # "HR" is its own user: agent HR belongs to hr, so it is refused, not granted to hr.
    with pytest.raises(Conflict) as err:
        services.set_up_queue(user=admin_user, queue_table="QT", queue_name="Q", queue_user="HR")
    assert err.value.field == "queue_user"
    assert not QueuePrivilege.objects.exists() and list(agent.users.all()) == [hr]
    # "Hr" names neither exactly and both in another case: ambiguous, refused.
    with pytest.raises(DomainError) as err:
        services.set_up_queue(user=admin_user, queue_table="QT", queue_name="Q", queue_user="Hr")
    assert err.value.field == "queue_user" and "exact name" in str(err.value)
    assert not QueueTable.objects.filter(name="QT").exists() and other.pk


def test_a_user_who_does_not_exist_is_refused_naming_queue_user_and_nothing_is_created(
    admin_user,
):
    before = ChangeLogEntry.objects.count()
    with pytest.raises(DomainError) as err:
        services.set_up_queue(
            user=admin_user, queue_table="QT", queue_name="Q", queue_user="nobody"
        )
    assert err.value.field == "queue_user"
    assert not QueueTable.objects.exists() and not Queue.objects.exists()
    assert not Agent.objects.exists() and ChangeLogEntry.objects.count() == before


def test_a_queue_name_taken_in_another_table_is_refused_naming_queue_name(admin_user, hr):
    other = services.queue_table_create(user=admin_user, name="OTHER", multiple_consumers=True)
    services.queue_create(user=admin_user, name="Q", queue_table=other)
    with pytest.raises(Conflict) as err:
        services.set_up_queue(user=admin_user, queue_table="QT", queue_name="Q", queue_user="hr")
    assert err.value.field == "queue_name"
    assert not QueueTable.objects.filter(name="QT").exists() and not Agent.objects.exists()


def test_only_a_configuring_role_may_set_up_a_queue(operator_user, hr):
    from core.exceptions import Forbidden

    with pytest.raises(Forbidden):
        services.set_up_queue(user=operator_user, queue_table="QT", queue_name="Q")
