"""Secure queues (spec/queues.md §1.5): the owner may do everything; anyone else must be a secure
queue user (associated with an AQ agent), hold the ENQUEUE or DEQUEUE privilege on the queue,
and act only as one of its own agents."""

from __future__ import annotations

import pytest

from core.exceptions import Forbidden
from queues import engine, services
from queues.models import Message, QueuePrivilege

from .helpers import make_queue, payloads, put, take


@pytest.fixture
def secure_queue(admin_user, operator_user):
    return make_queue(admin_user, "SECURE", secure=True, owner=operator_user)


def make_secure_user(admin, user, agent_name: str, *privileges: str, queue=None):
    agent = services.agent_create(user=admin, name=agent_name)
    services.agent_enable_db_access(user=admin, agent=agent, db_user=user)
    for privilege in privileges:
        services.queue_privilege_grant(user=admin, queue=queue, grantee=user, privilege=privilege)
    return agent


def test_the_owner_may_enqueue_browse_and_dequeue_without_an_agent(operator_user, secure_queue):
    put(secure_queue, "m1", "m2", user=operator_user)
    assert payloads(take(secure_queue, user=operator_user, mode=engine.BROWSE, batch=5)) == [
        "m1",
        "m2",
    ]
    assert payloads(take(secure_queue, user=operator_user)) == ["m1"]


def test_a_user_with_no_agent_is_refused_both_ways(operator_user, plain_operator, secure_queue):
    put(secure_queue, "m", user=operator_user)
    with pytest.raises(Forbidden) as err:
        put(secure_queue, "x", user=plain_operator)
    assert "not a secure queue user" in err.value.message
    for mode in (engine.REMOVE, engine.BROWSE):
        with pytest.raises(Forbidden):
            take(secure_queue, user=plain_operator, mode=mode)
    assert Message.objects.filter(queue=secure_queue).count() == 1


def test_an_administrator_who_is_not_the_owner_needs_an_agent_too(admin_user, secure_queue):
    with pytest.raises(Forbidden):
        put(secure_queue, "x", user=admin_user)


def test_an_enqueue_grant_allows_enqueue_but_not_dequeue(admin_user, plain_operator, secure_queue):
    make_secure_user(admin_user, plain_operator, "OLGA", "ENQUEUE", queue=secure_queue)
    put(secure_queue, "m", user=plain_operator)
    with pytest.raises(Forbidden) as err:
        take(secure_queue, user=plain_operator)
    assert "DEQUEUE" in err.value.message
    assert Message.objects.filter(queue=secure_queue).count() == 1


def test_a_dequeue_grant_allows_dequeue_but_not_enqueue(
    admin_user, operator_user, plain_operator, secure_queue
):
    make_secure_user(admin_user, plain_operator, "OLGA", "DEQUEUE", queue=secure_queue)
    put(secure_queue, "m", user=operator_user)
    with pytest.raises(Forbidden):
        put(secure_queue, "x", user=plain_operator)
    assert payloads(take(secure_queue, user=plain_operator)) == ["m"]


def test_an_agent_without_any_grant_is_refused(admin_user, plain_operator, secure_queue):
    make_secure_user(admin_user, plain_operator, "OLGA", queue=secure_queue)
    with pytest.raises(Forbidden) as err:
        put(secure_queue, "x", user=plain_operator)
    assert "ENQUEUE" in err.value.message


def test_the_all_grant_allows_both(admin_user, plain_operator, secure_queue):
    make_secure_user(admin_user, plain_operator, "OLGA", "ALL", queue=secure_queue)
    put(secure_queue, "m", user=plain_operator)
    assert payloads(take(secure_queue, user=plain_operator)) == ["m"]


def test_a_grant_on_another_queue_does_not_count(admin_user, plain_operator, secure_queue):
    other = services.queue_create(
        user=admin_user, name="SECURE_OTHER", queue_table=secure_queue.queue_table
    )
    make_secure_user(admin_user, plain_operator, "OLGA", "ALL", queue=other)
    put(other, "ok", user=plain_operator)
    with pytest.raises(Forbidden):
        put(secure_queue, "x", user=plain_operator)


def test_sending_as_another_users_agent_is_refused_naming_the_sender(
    admin_user, operator_user, plain_operator, secure_queue
):
    make_secure_user(admin_user, plain_operator, "OLGA", "ALL", queue=secure_queue)
    services.agent_create(user=admin_user, name="SOMEONE_ELSE")
    with pytest.raises(Forbidden) as err:
        put(secure_queue, "x", user=plain_operator, sender="SOMEONE_ELSE")
    assert err.value.field == "sender"
    [mid] = put(secure_queue, "ok", user=plain_operator, sender="olga")
    assert Message.objects.get(pk=mid).sender == "olga"


def test_dequeuing_as_another_users_agent_is_refused_naming_the_consumer(
    admin_user, operator_user, plain_operator
):
    queue = make_queue(
        admin_user, "SECURE_MC", secure=True, multiple_consumers=True, owner=operator_user
    )
    services.subscriber_add(user=admin_user, queue=queue, name="OLGA")
    services.subscriber_add(user=admin_user, queue=queue, name="OSCAR")
    make_secure_user(admin_user, plain_operator, "OLGA", "ALL", queue=queue)
    services.agent_create(user=admin_user, name="OSCAR")
    put(queue, "m", user=operator_user)
    with pytest.raises(Forbidden) as err:
        take(queue, user=plain_operator, consumer_name="OSCAR")
    assert err.value.field == "consumer_name"
    assert payloads(take(queue, user=plain_operator, consumer_name="OLGA")) == ["m"]
    assert payloads(take(queue, user=operator_user, consumer_name="OSCAR")) == ["m"]


def test_revoking_the_grant_or_the_agent_access_refuses_again(
    admin_user, plain_operator, secure_queue
):
    agent = make_secure_user(admin_user, plain_operator, "OLGA", "ENQUEUE", queue=secure_queue)
    put(secure_queue, "ok", user=plain_operator)
    services.queue_privilege_revoke(
        user=admin_user, grant=QueuePrivilege.objects.get(user=plain_operator)
    )
    with pytest.raises(Forbidden):
        put(secure_queue, "x", user=plain_operator)
    services.queue_privilege_grant(
        user=admin_user, queue=secure_queue, grantee=plain_operator, privilege="ENQUEUE"
    )
    put(secure_queue, "ok again", user=plain_operator)
    services.agent_disable_db_access(user=admin_user, agent=agent, db_user=plain_operator)
    with pytest.raises(Forbidden):
        put(secure_queue, "x", user=plain_operator)


def test_a_superuser_bypasses_the_secure_queue_checks(superuser, secure_queue):
    put(secure_queue, "root", user=superuser, sender="ANYONE")
    assert payloads(take(secure_queue, user=superuser)) == ["root"]


def test_internal_callers_bypass_the_secure_queue_checks(secure_queue):
    put(secure_queue, "internal", user=None)
    assert payloads(take(secure_queue, user=None)) == ["internal"]


def test_ack_and_release_check_the_dequeue_privilege(
    admin_user, operator_user, plain_operator, secure_queue
):
    put(secure_queue, "m", user=operator_user)
    [leased] = take(secure_queue, user=operator_user, mode=engine.LOCKED)
    make_secure_user(admin_user, plain_operator, "OLGA", "ENQUEUE", queue=secure_queue)
    with pytest.raises(Forbidden):
        services.message_ack(
            user=plain_operator,
            queue=secure_queue,
            msgid=leased.id,
            lock_token=str(leased.lock_token),
        )
    with pytest.raises(Forbidden):
        services.message_release(
            user=plain_operator,
            queue=secure_queue,
            msgid=leased.id,
            lock_token=str(leased.lock_token),
        )
    services.message_ack(
        user=operator_user, queue=secure_queue, msgid=leased.id, lock_token=str(leased.lock_token)
    )


def test_a_non_secure_queue_needs_no_agent(plain_operator, queue):
    put(queue, "m", user=plain_operator)
    assert payloads(take(queue, user=plain_operator)) == ["m"]
