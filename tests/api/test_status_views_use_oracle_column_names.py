"""The status endpoints read the PostgreSQL views and answer with Oracle's column names."""

from __future__ import annotations

from queues import services


def test_dba_queue_tables_has_oracles_columns(monitor_api, queue):
    [row] = monitor_api.get("/api/status/dba_queue_tables/").json()["results"]

    assert {
        "owner",
        "queue_table",
        "type",
        "object_type",
        "sort_order",
        "recipients",
        "message_grouping",
        "compatible",
        "primary_instance",
        "secondary_instance",
        "owner_instance",
        "user_comment",
        "secure",
    } <= set(row)
    assert (row["owner"], row["queue_table"], row["recipients"], row["secure"]) == (
        "alice",
        "QT_ORDERS",
        "SINGLE",
        "NO",
    )
    assert "ENQ_TIME" in row["sort_order"].upper()


def test_dba_queue_tables_says_multiple_and_secure(monitor_api, admin_user):
    services.queue_table_create(
        user=admin_user,
        name="QT_MS",
        sort_order="priority",
        multiple_consumers=True,
        secure=True,
    )

    [row] = monitor_api.get("/api/status/dba_queue_tables/").json()["results"]

    assert (row["recipients"], row["secure"]) == ("MULTIPLE", "YES")


def test_dba_queues_has_oracles_columns(monitor_api, queue):
    rows = {r["name"]: r for r in monitor_api.get("/api/status/dba_queues/").json()["results"]}

    assert set(rows) == {"ORDERS", "AQ$_QT_ORDERS_E"}
    orders = rows["ORDERS"]
    assert {
        "owner",
        "name",
        "qid",
        "queue_table",
        "queue_type",
        "max_retries",
        "retry_delay",
        "enqueue_enabled",
        "dequeue_enabled",
        "retention",
        "user_comment",
    } <= set(orders)
    assert (orders["qid"], orders["queue_table"], orders["queue_type"]) == (
        queue.pk,
        "QT_ORDERS",
        "NORMAL_QUEUE",
    )
    assert (orders["max_retries"], orders["enqueue_enabled"].strip()) == (5, "YES")
    assert rows["AQ$_QT_ORDERS_E"]["queue_type"] == "EXCEPTION_QUEUE"


def test_dba_queues_follows_a_stop(admin_api, monitor_api, queue):
    admin_api.post("/api/queues/ORDERS/stop/", {"what": "enqueue"})

    [orders] = monitor_api.get("/api/status/dba_queues/?limit=1&offset=1").json()["results"]

    assert orders["name"] == "ORDERS"
    assert (orders["enqueue_enabled"].strip(), orders["dequeue_enabled"].strip()) == ("NO", "YES")


def test_dba_aq_agent_privs_has_oracles_columns(admin_api, monitor_api, operator_user):
    admin_api.post("/api/agents/", {"name": "APP1"})
    admin_api.post("/api/agents/APP1/enable_access/", {"user": "oscar"})

    [row] = monitor_api.get("/api/status/dba_aq_agent_privs/").json()["results"]

    assert set(row) == {"agent_name", "db_username", "http_enabled", "smtp_enabled"}
    assert (row["agent_name"], row["db_username"]) == ("APP1", "oscar")
