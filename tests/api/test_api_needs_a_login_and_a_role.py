"""Anonymous requests are refused with 401; a user with no role is refused with 403."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

PATHS = [
    "/api/queue-tables/",
    "/api/queues/",
    "/api/queues/ORDERS/",
    "/api/messages/",
    "/api/subscribers/",
    "/api/agents/",
    "/api/privileges/",
    "/api/changelog/",
    "/api/status/dba_queues/",
]


@pytest.mark.parametrize("path", PATHS)
def test_anonymous_reads_are_refused(queue, path):
    response = APIClient().get(path)

    assert response.status_code in (401, 403)
    assert response.status_code == 401  # token auth answers with a WWW-Authenticate challenge


def test_anonymous_enqueue_is_refused_and_writes_nothing(queue, snapshot):
    before = snapshot()

    response = APIClient().post("/api/queues/ORDERS/enqueue/", {"payload": 1}, format="json")

    assert response.status_code == 401
    before.assert_unchanged()


def test_a_bad_token_is_refused(queue):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    assert client.get("/api/queues/").status_code == 401


@pytest.mark.parametrize("path", PATHS)
def test_a_user_without_a_role_may_not_read(token_client, roleless_user, queue, path):
    response = token_client(roleless_user).get(path)

    assert response.status_code == 403


def test_a_user_without_a_role_may_not_browse_or_enqueue(
    token_client, roleless_user, queue, snapshot
):
    client = token_client(roleless_user)
    before = snapshot()

    browse = client.post("/api/queues/ORDERS/dequeue/", {"mode": "BROWSE"}, format="json")
    enqueue = client.post("/api/queues/ORDERS/enqueue/", {"payload": 1}, format="json")

    assert (browse.status_code, enqueue.status_code) == (403, 403)
    before.assert_unchanged()


def test_session_login_works_for_the_api_too(client, monitor_user, queue):
    client.force_login(monitor_user)

    response = client.get("/api/queues/ORDERS/")

    assert response.status_code == 200
    assert response.json()["name"] == "ORDERS"
