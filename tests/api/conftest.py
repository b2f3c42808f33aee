"""API fixtures: token-authenticated clients per role and a few ready-made topologies."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.choices import Role
from core.models import ChangeLogEntry
from queues import engine, services
from queues.models import Message, Queue, QueueTable

# The propagation API tests build topologies with the jobs tests' own fixtures.
from tests.jobs.conftest import make_queue, mc_table, rule_set, sc_table  # noqa: F401


@pytest.fixture(autouse=True)
def _role_groups(db) -> None:
    """The role groups come from a data migration; a flush by a transactional test elsewhere may
    have removed them from a reused test database."""
    for role in Role.values:
        Group.objects.get_or_create(name=role)


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    """Users are made per test; the production hasher would spend most of the run hashing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def roleless_user(db) -> User:
    return User.objects.create_user(username="nora", password="pw-nora")


@pytest.fixture
def token_client() -> Callable[[User | None], APIClient]:
    """An API client authenticated with the user's token (anonymous with ``None``)."""

    def make(user: User | None) -> APIClient:
        client = APIClient()
        client.default_format = "json"  # as applications send it; multipart flattens lists
        if user is not None:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def admin_api(admin_user, token_client) -> APIClient:
    return token_client(admin_user)


@pytest.fixture
def operator_api(operator_user, token_client) -> APIClient:
    return token_client(operator_user)


@pytest.fixture
def monitor_api(monitor_user, token_client) -> APIClient:
    return token_client(monitor_user)


@pytest.fixture
def enqueue_some(admin_user) -> Callable[..., list[int]]:
    """Enqueue messages through the service (as an administrator) and return their ids."""

    def enqueue(queue: Queue, *payloads: object, **fields: object) -> list[int]:
        msgs = [engine.NewMessage(payload=p, **fields) for p in payloads]  # type: ignore[arg-type]
        return services.message_enqueue(user=admin_user, queue=queue, messages=msgs)

    return enqueue


@pytest.fixture
def typed_queue(admin_user) -> Queue:
    """A queue whose table takes ORDER payloads validated by a JSON Schema."""
    schema = {
        "type": "object",
        "required": ["order_id", "items"],
        "properties": {
            "order_id": {"type": "integer"},
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["sku", "qty"],
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                },
            },
        },
    }
    qt = services.queue_table_create(
        user=admin_user,
        name="QT_TYPED",
        sort_order="enq_time",
        payload_type="ORDER",
        payload_schema=schema,
    )
    return services.queue_create(user=admin_user, name="TYPED_ORDERS", queue_table=qt)


@pytest.fixture
def multi_queue(admin_user) -> Queue:
    """A multi-consumer queue with subscribers BILLING and SHIPPING."""
    qt = services.queue_table_create(
        user=admin_user, name="QT_MULTI", sort_order="enq_time", multiple_consumers=True
    )
    q = services.queue_create(user=admin_user, name="EVENTS", queue_table=qt)
    services.subscriber_add(user=admin_user, queue=q, name="BILLING")
    services.subscriber_add(user=admin_user, queue=q, name="SHIPPING")
    return q


@pytest.fixture
def expired_message(admin_user, queue_table) -> tuple[Queue, Queue, int]:
    """A message that failed its only try on RETRY_ONCE and sits in the exception queue.
    Returns (source queue, exception queue, message id)."""
    q = services.queue_create(
        user=admin_user, name="RETRY_ONCE", queue_table=queue_table, max_retries=0
    )
    [mid] = services.message_enqueue(
        user=admin_user, queue=q, messages=[engine.NewMessage(payload={"n": 1})]
    )
    [got] = services.message_dequeue(
        user=admin_user, queue=q, request=services.DequeueRequest(mode=engine.LOCKED)
    )
    services.message_release(
        user=admin_user, queue=q, msgid=got.id, lock_token=str(got.lock_token), failed=True
    )
    q.refresh_from_db()
    return q, q.exception_queue, mid


class Snapshot:
    """Counts of everything a write could touch, to prove a refused request changed nothing."""

    def __init__(self) -> None:
        self.values = self.take()

    @staticmethod
    def take() -> dict[str, object]:
        from queues.models import Agent, AgentUser, QueuePrivilege, Subscriber

        return {
            "queue_tables": sorted(QueueTable.objects.values_list("name", "comment")),
            "queues": sorted(
                Queue.objects.values_list(
                    "name",
                    "max_retries",
                    "retry_delay",
                    "retention_time",
                    "enqueue_enabled",
                    "dequeue_enabled",
                    "comment",
                )
            ),
            "messages": sorted(Message.objects.values_list("id", "queue_id", "state", "attempts")),
            "subscribers": sorted(Subscriber.objects.values_list("queue_id", "name")),
            "agents": sorted(Agent.objects.values_list("name", flat=True)),
            "agent_users": sorted(AgentUser.objects.values_list("agent_id", "user_id")),
            "privileges": sorted(
                QueuePrivilege.objects.values_list("queue_id", "user_id", "privilege")
            ),
            "changelog": ChangeLogEntry.objects.count(),
        }

    def assert_unchanged(self) -> None:
        assert self.take() == self.values


@pytest.fixture
def snapshot() -> Callable[[], Snapshot]:
    return Snapshot


@pytest.fixture
def topology(admin_user, operator_user, queue, multi_queue, expired_message, enqueue_some) -> dict:
    """Something of every kind for the role checks: ORDERS with two READY messages, EVENTS with
    subscribers, an agent used by oscar, a privilege, and a message in an exception queue."""
    from queues.models import Subscriber

    enqueue_some(queue, {"n": 1}, {"n": 2})
    agent = services.agent_create(user=admin_user, name="AGENT_OSCAR")
    services.agent_enable_db_access(user=admin_user, agent=agent, db_user=operator_user)
    grant = services.queue_privilege_grant(
        user=admin_user, queue=queue, grantee=operator_user, privilege="ENQUEUE"
    )
    _source, exq, mid = expired_message
    return {
        "subscriber": Subscriber.objects.get(queue=multi_queue, name="BILLING").pk,
        "privilege": grant.pk,
        "exception_queue": exq.name,
        "expired_id": mid,
        "user": operator_user.username,
    }
