"""/api/changelog/ lists the entries newest first, filtered by user, action and object type."""

from __future__ import annotations

import pytest

from queues import services


@pytest.fixture
def history(admin_user, operator_user, queue_table, queue) -> None:
    """alice creates QT_ORDERS (+ORDERS) and edits ORDERS; oscar stops and purges it."""
    services.queue_update(user=admin_user, queue=queue, comment="edited")
    services.queue_stop(user=operator_user, queue=queue)
    services.queue_purge(
        user=operator_user, queue=queue, condition=services.engine.PurgeCondition()
    )


def _verbs(response) -> list[str]:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.content
    return [row["verb"] for row in response.json()["results"]]


def test_it_lists_entries_newest_first(monitor_api, history):
    assert _verbs(monitor_api.get("/api/changelog/")) == [
        "queue_purge",
        "queue_stop",
        "queue_update",
        "queue_create",
        "queue_table_create",
    ]


def test_it_filters_by_username(monitor_api, history):
    assert _verbs(monitor_api.get("/api/changelog/?username=oscar")) == [
        "queue_purge",
        "queue_stop",
    ]


def test_it_filters_by_action(monitor_api, history):
    assert _verbs(monitor_api.get("/api/changelog/?action=update")) == ["queue_update"]
    assert _verbs(monitor_api.get("/api/changelog/?action=action")) == ["queue_purge", "queue_stop"]


def test_it_filters_by_object_type(monitor_api, history):
    assert _verbs(monitor_api.get("/api/changelog/?object_type=queues.queuetable")) == [
        "queue_table_create"
    ]


def test_filters_combine(monitor_api, history):
    response = monitor_api.get("/api/changelog/?username=alice&object_type=queues.queue")

    assert _verbs(response) == ["queue_update", "queue_create"]


def test_an_entry_shows_user_time_object_and_values(monitor_api, history, queue):
    [row] = monitor_api.get("/api/changelog/?verb=queue_update").json()["results"]

    assert row["username"] == "alice"
    assert row["time"]
    assert (row["object_type"], row["object_id"], row["object_repr"]) == (
        "queues.queue",
        str(queue.pk),
        "ORDERS",
    )
    assert (row["before"]["comment"], row["after"]["comment"]) == ("", "edited")


def test_one_entry_is_readable_by_id(monitor_api, history):
    first = monitor_api.get("/api/changelog/").json()["results"][0]

    response = monitor_api.get(f"/api/changelog/{first['id']}/")

    assert response.status_code == 200
    assert response.json() == first


def test_an_unknown_action_filter_is_a_400_naming_the_field(monitor_api, history):
    response = monitor_api.get("/api/changelog/?action=explode")

    assert response.status_code == 400
    assert "action" in response.json()


def test_the_change_log_cannot_be_written_through_the_api(admin_api, history):
    response = admin_api.post("/api/changelog/", {"verb": "forged"}, format="json")

    assert response.status_code == 405
