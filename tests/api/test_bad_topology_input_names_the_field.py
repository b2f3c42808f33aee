"""Bad topology input through the API is a 4xx naming the field, never a 500, and writes nothing."""

from __future__ import annotations

import pytest


def _assert_refused(response, status: int, field: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.content
    assert field in response.json(), response.json()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "1STARTS_WITH_DIGIT", "sort_order": "enq_time"}, "name"),
        ({"name": "has space", "sort_order": "enq_time"}, "name"),
        ({"name": "semi;colon", "sort_order": "enq_time"}, "name"),
        ({"name": "X" * 129, "sort_order": "enq_time"}, "name"),
        # Its exception queue AQ$_<name>_E would pass 128 characters.
        ({"name": "X" * 123, "sort_order": "enq_time"}, "name"),
        ({"name": "", "sort_order": "enq_time"}, "name"),
        ({"sort_order": "enq_time"}, "name"),
        ({"name": "QT_X", "sort_order": "random"}, "sort_order"),
        (
            {"name": "QT_X", "sort_order": "enq_time", "multiple_consumers": "maybe"},
            "multiple_consumers",
        ),
        ({"name": "QT_X", "sort_order": "enq_time", "payload_type": "ORDER"}, "payload_schema"),
        (
            {
                "name": "QT_X",
                "sort_order": "enq_time",
                "payload_type": "ORDER",
                "payload_schema": {"type": "no-such-type"},
            },
            "payload_schema",
        ),
        (
            {"name": "QT_X", "sort_order": "enq_time", "payload_schema": {"type": "object"}},
            "payload_schema",
        ),
    ],
)
def test_a_bad_queue_table_is_refused_naming_the_field(admin_api, snapshot, body, field):
    before = snapshot()

    response = admin_api.post("/api/queue-tables/", body, format="json")

    _assert_refused(response, 400, field)
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "9LIVES", "queue_table": "QT_ORDERS"}, "name"),
        ({"name": "bad-name", "queue_table": "QT_ORDERS"}, "name"),
        ({"name": "Q", "queue_table": "NO_SUCH_TABLE"}, "queue_table"),
        ({"name": "Q"}, "queue_table"),
        ({"name": "Q", "queue_table": "QT_ORDERS", "max_retries": -1}, "max_retries"),
        ({"name": "Q", "queue_table": "QT_ORDERS", "max_retries": "lots"}, "max_retries"),
        ({"name": "Q", "queue_table": "QT_ORDERS", "retry_delay": -0.5}, "retry_delay"),
        ({"name": "Q", "queue_table": "QT_ORDERS", "retention_time": -10}, "retention_time"),
        ({"name": "Q", "queue_table": "QT_ORDERS", "kind": "SPECIAL"}, "kind"),
        ({"name": "Q", "queue_table": "QT_ORDERS", "exception_queue": "ORDERS"}, "exception_queue"),
    ],
)
def test_a_bad_queue_is_refused_naming_the_field(admin_api, queue, snapshot, body, field):
    before = snapshot()

    response = admin_api.post("/api/queues/", body, format="json")

    _assert_refused(response, 400, field)
    before.assert_unchanged()


def test_an_exception_queue_of_another_queue_table_is_refused(admin_api, admin_user, queue):
    admin_api.post("/api/queue-tables/", {"name": "QT_OTHER", "sort_order": "enq_time"})

    response = admin_api.post(
        "/api/queues/",
        {"name": "Q", "queue_table": "QT_ORDERS", "exception_queue": "AQ$_QT_OTHER_E"},
        format="json",
    )

    _assert_refused(response, 400, "exception_queue")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"retry_delay": -1}, "retry_delay"),
        ({"retention_time": -1}, "retention_time"),
        ({"exception_queue": "ORDERS"}, "exception_queue"),
    ],
)
def test_a_bad_queue_update_is_refused_naming_the_field(admin_api, queue, snapshot, body, field):
    before = snapshot()

    response = admin_api.patch("/api/queues/ORDERS/", body, format="json")

    _assert_refused(response, 400, field)
    before.assert_unchanged()


def test_enabling_enqueue_on_an_exception_queue_is_refused(admin_api, queue, snapshot):
    before = snapshot()

    response = admin_api.patch(
        "/api/queues/AQ$_QT_ORDERS_E/", {"enqueue_enabled": True}, format="json"
    )

    _assert_refused(response, 400, "enqueue_enabled")
    before.assert_unchanged()


def test_a_schema_on_an_untyped_queue_table_is_refused(admin_api, queue, snapshot):
    before = snapshot()

    response = admin_api.patch(
        "/api/queue-tables/QT_ORDERS/", {"payload_schema": {"type": "object"}}, format="json"
    )

    _assert_refused(response, 400, "payload_schema")
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/queue-tables/", {"name": "QT_ORDERS", "sort_order": "enq_time"}),
        ("/api/queue-tables/", {"name": "qt_orders", "sort_order": "priority"}),
        ("/api/queues/", {"name": "ORDERS", "queue_table": "QT_ORDERS"}),
        ("/api/queues/", {"name": "orders", "queue_table": "QT_ORDERS"}),
        ("/api/agents/", {"name": "AGENT_OSCAR"}),
        ("/api/subscribers/", {"queue": "EVENTS", "name": "billing"}),
    ],
)
def test_a_duplicate_name_is_a_409_naming_name(admin_api, topology, snapshot, path, body):
    before = snapshot()

    response = admin_api.post(path, body, format="json")

    _assert_refused(response, 409, "name")
    before.assert_unchanged()


def test_a_queue_table_whose_exception_queue_name_is_taken_writes_nothing(
    admin_api, admin_user, queue_table, snapshot
):
    from queues import services

    services.queue_create(user=admin_user, name="AQ$_QT_CLASH_E", queue_table=queue_table)
    before = snapshot()

    response = admin_api.post(
        "/api/queue-tables/", {"name": "QT_CLASH", "sort_order": "enq_time"}, format="json"
    )

    _assert_refused(response, 409, "name")
    before.assert_unchanged()


def test_a_subscriber_on_a_single_consumer_queue_is_refused(admin_api, queue, snapshot):
    before = snapshot()

    response = admin_api.post(
        "/api/subscribers/", {"queue": "ORDERS", "name": "AUDIT"}, format="json"
    )

    _assert_refused(response, 400, "queue")
    before.assert_unchanged()


def test_an_unknown_privilege_is_refused(admin_api, queue, operator_user, snapshot):
    before = snapshot()

    response = admin_api.post(
        "/api/privileges/",
        {"queue": "ORDERS", "user": "oscar", "privilege": "DROP"},
        format="json",
    )

    _assert_refused(response, 400, "privilege")
    before.assert_unchanged()


def test_disabling_access_that_was_never_enabled_names_the_user(admin_api, topology, snapshot):
    before = snapshot()

    response = admin_api.post(
        "/api/agents/AGENT_OSCAR/disable_access/", {"user": "alice"}, format="json"
    )

    _assert_refused(response, 400, "user")
    before.assert_unchanged()


@pytest.mark.parametrize(
    "path",
    [
        "/api/queues/NO_SUCH_QUEUE/",
        "/api/queues/999999/",
        "/api/queue-tables/NO_SUCH_TABLE/",
        "/api/agents/NO_SUCH_AGENT/",
        "/api/subscribers/999999/",
        "/api/privileges/999999/",
        "/api/messages/999999/",
        "/api/changelog/999999/",
        "/api/queues/NO_SUCH_QUEUE/messages/",
    ],
)
def test_an_unknown_object_is_a_404(admin_api, queue, path):
    assert admin_api.get(path).status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/queues/NO_SUCH_QUEUE/enqueue/"),
        ("post", "/api/queues/NO_SUCH_QUEUE/dequeue/"),
        ("post", "/api/queues/NO_SUCH_QUEUE/purge/"),
        ("post", "/api/queues/NO_SUCH_QUEUE/start/"),
        ("patch", "/api/queues/NO_SUCH_QUEUE/"),
        ("delete", "/api/queues/NO_SUCH_QUEUE/"),
        ("delete", "/api/queue-tables/NO_SUCH_TABLE/"),
    ],
)
def test_writing_to_an_unknown_object_is_a_404(admin_api, queue, snapshot, method, path):
    before = snapshot()

    response = getattr(admin_api, method)(path, {"payload": 1, "all": True}, format="json")

    assert response.status_code == 404, response.content
    before.assert_unchanged()


@pytest.mark.parametrize(
    "path",
    [
        "/api/queue-tables/",
        "/api/queues/",
        "/api/queues/ORDERS/enqueue/",
        "/api/queues/ORDERS/dequeue/",
        "/api/queues/ORDERS/purge/",
        "/api/agents/",
    ],
)
def test_a_malformed_json_body_is_a_400(admin_api, queue, snapshot, path):
    before = snapshot()

    response = admin_api.generic(
        "POST", path, '{"name": "X", "payload": ', content_type="application/json"
    )

    assert response.status_code == 400, response.content
    assert "JSON" in response.json()["detail"]
    before.assert_unchanged()


def test_a_json_body_that_is_not_an_object_is_a_400(admin_api, queue, snapshot):
    before = snapshot()

    responses = [
        admin_api.generic("POST", path, body, content_type="application/json")
        for path in ("/api/queues/", "/api/queues/ORDERS/enqueue/", "/api/queues/ORDERS/stop/")
        for body in ("[1, 2]", '"text"', "42", "null")
    ]

    assert [r.status_code for r in responses] == [400] * len(responses), [
        r.content for r in responses
    ]
    before.assert_unchanged()


def test_the_longest_queue_table_name_keeps_its_exception_queue_whole(admin_api):
    name = "Q" * 122
    response = admin_api.post(
        "/api/queue-tables/", {"name": name, "sort_order": "enq_time"}, format="json"
    )
    assert response.status_code == 201, response.content
    queues = admin_api.get("/api/queues/", {"queue_table": response.json()["id"]}).json()
    names = [q["name"] for q in queues.get("results", queues)]
    assert f"AQ$_{name}_E" in names
