"""Every page redirects an anonymous visitor to the login page; the login page itself is open."""

from __future__ import annotations

import pytest
from django.test import Client

from queues.models import Queue

PAGES = [
    "/",
    "/queues/",
    "/queues/add/",
    "/queues/{queue}/",
    "/queues/{queue}/edit/",
    "/queues/{queue}/delete/",
    "/queues/tables/",
    "/queues/tables/add/",
    "/queues/tables/{table}/",
    "/queues/agents/",
    "/queues/privileges/",
    "/queues/status/",
    "/changelog/",
    "/rules/",
    "/jobs/",
]


def _fill(path: str, queue) -> str:  # type: ignore[no-untyped-def]
    return path.format(queue=queue.pk, table=queue.queue_table_id)


@pytest.mark.parametrize("path", PAGES)
def test_an_anonymous_visit_redirects_to_login(queue, path):
    url = _fill(path, queue)

    response = Client().get(url)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert f"next={url}" in response["Location"].replace("%2F", "/")


@pytest.mark.parametrize(
    "path",
    ["/queues/{queue}/purge/", "/queues/{queue}/stop/", "/queues/{queue}/enqueue/", "/queues/add/"],
)
def test_an_anonymous_post_redirects_to_login_and_changes_nothing(queue, snapshot, path):
    before = snapshot()

    response = Client().post(_fill(path, queue), {"confirm": "ORDERS", "payload": "1"})

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    before.assert_unchanged()
    assert Queue.objects.get(name="ORDERS").enqueue_enabled


def test_the_login_page_is_open_and_logs_in(admin_user):
    client = Client()

    page = client.get("/login/")
    login = client.post("/login/", {"username": "alice", "password": "pw-alice"})

    assert page.status_code == 200
    assert login.status_code == 302
    assert client.get("/queues/").status_code == 200


def test_a_user_without_a_role_gets_403_on_pages(roleless_user, queue):
    client = Client()
    client.force_login(roleless_user)

    assert client.get("/queues/").status_code == 403
    assert client.get(f"/queues/{queue.pk}/").status_code == 403
