"""A message picked from a queue is tried against a client's rule sets (Table 5-1), read-only."""

from __future__ import annotations

from queues import engine, services
from rules import services as rule_services


def _row_lcr(table: str) -> engine.NewMessage:
    return engine.NewMessage(
        kind="ROW_LCR",
        payload={
            "source_database_name": "DBS1.EXAMPLE.COM",
            "command_type": "INSERT",
            "object_owner": "HR",
            "object_name": table,
            "tag": None,
            "old_values": {},
            "new_values": {"ID": 1},
        },
    )


def _exclude_job_history(admin_user) -> None:
    rule_services.rules_generate(
        user=admin_user,
        kind="exclude_table",
        params={"table_name": "hr.job_history", "source_database": "dbs1.example.com"},
        rule_set="HR_POS",
        negative_rule_set="HR_NEG",
    )


def test_a_queued_change_to_the_excluded_table_is_discarded_by_the_negative_set(
    admin_user, monitor_api, queue
):
    _exclude_job_history(admin_user)
    [mid] = services.message_enqueue(user=None, queue=queue, messages=[_row_lcr("JOB_HISTORY")])

    body = monitor_api.post(
        f"/api/messages/{mid}/test/", {"positive": "HR_POS", "negative": "HR_NEG"}, format="json"
    ).json()

    assert body["decision"] == "DISCARD"
    assert [r["result"] for r in body["negative"]] == ["TRUE"]


def test_a_queued_change_to_another_table_of_the_schema_is_performed(
    admin_user, monitor_api, queue
):
    _exclude_job_history(admin_user)
    [mid] = services.message_enqueue(user=None, queue=queue, messages=[_row_lcr("DEPARTMENTS")])

    body = monitor_api.post(
        f"/api/messages/{mid}/test/", {"positive": "HR_POS", "negative": "HR_NEG"}, format="json"
    ).json()

    assert body["decision"] == "PERFORM"
    assert [r["result"] for r in body["positive"]] == ["TRUE"]
    assert [r["result"] for r in body["negative"]] == ["FALSE"]


def test_an_unknown_rule_set_is_a_400_naming_it(monitor_api, queue):
    [mid] = services.message_enqueue(user=None, queue=queue, messages=[_row_lcr("X")])

    response = monitor_api.post(f"/api/messages/{mid}/test/", {"positive": "NOPE"}, format="json")

    assert response.status_code == 400
    assert "positive" in response.json()


def test_dequeue_by_condition_through_the_api(admin_api, queue):
    services.message_enqueue(
        user=None,
        queue=queue,
        messages=[engine.NewMessage(payload={"k": k}) for k in ("a", "b", "a")],
    )

    body = admin_api.post(
        "/api/queues/ORDERS/dequeue/", {"batch": 10, "condition": ":msg.k = 'b'"}, format="json"
    ).json()
    assert [m["payload"] for m in body["messages"]] == [{"k": "b"}]

    bad = admin_api.post("/api/queues/ORDERS/dequeue/", {"condition": ":msg.k ="}, format="json")
    assert bad.status_code == 400
    assert "column" in bad.json()["condition"][0]
