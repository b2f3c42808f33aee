"""The change log is browsable in the console, filtered by user, action and object type."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from queues import engine, services


@pytest.fixture
def history(admin_user, operator_user, queue) -> None:
    services.queue_update(user=admin_user, queue=queue, comment="edited")
    services.queue_stop(user=operator_user, queue=queue)
    services.queue_purge(user=operator_user, queue=queue, condition=engine.PurgeCondition())


def _verbs(html: str) -> list[str]:
    verbs = ["queue_table_create", "queue_create", "queue_update", "queue_stop", "queue_purge"]
    return sorted(v for v in verbs if f">{v}<" in html)


def test_the_change_log_page_lists_every_entry(monitor_client, history):
    response = monitor_client.get("/changelog/")

    assert response.status_code == 200
    assert _verbs(response.content.decode()) == [
        "queue_create",
        "queue_purge",
        "queue_stop",
        "queue_table_create",
        "queue_update",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("username=oscar", ["queue_purge", "queue_stop"]),
        ("action=update", ["queue_update"]),
        ("action=create", ["queue_create", "queue_table_create"]),
        ("object_type=queues.queuetable", ["queue_table_create"]),
        ("username=alice&object_type=queues.queue", ["queue_create", "queue_update"]),
    ],
)
def test_the_change_log_page_filters(monitor_client, history, query, expected):
    response = monitor_client.get(f"/changelog/?{query}")

    assert response.status_code == 200
    assert _verbs(response.content.decode()) == expected


def test_an_htmx_filter_request_gets_only_the_table(monitor_client, history):
    response = monitor_client.get("/changelog/?username=oscar", HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert "<html" not in html
    assert _verbs(html) == ["queue_purge", "queue_stop"]


def test_an_entry_page_shows_before_and_after(monitor_client, history):
    entry = ChangeLogEntry.objects.get(verb="queue_update")

    response = monitor_client.get(f"/changelog/{entry.pk}/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "alice" in html and "ORDERS" in html
    assert "&quot;comment&quot;: &quot;edited&quot;" in html
    assert "&quot;comment&quot;: &quot;&quot;" in html


def test_a_change_made_in_the_console_shows_up_in_the_log(admin_client, queue):
    admin_client.post(f"/queues/{queue.pk}/stop/", {"what": "dequeue"})

    html = admin_client.get("/changelog/?action=action").content.decode()

    assert _verbs(html) == ["queue_stop"]
