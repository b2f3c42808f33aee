"""What the API returns as null is nullable in the schema, a blank choice is in its enum, a
required response field is really sent, and documented success codes are the real ones. Each
check takes a real response and validates it against the schema's own component."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml
from django.contrib.auth.models import User


@pytest.fixture
def schema(client, monitor_user) -> dict:
    client.force_login(monitor_user)
    return yaml.safe_load(client.get("/api/schema/").content)


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0 to JSON Schema: ``nullable: true`` becomes a null alternative."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k not in ("nullable", "readOnly")}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _validate(schema: dict, component: str, value: Any) -> None:
    document = _json_schema(schema["components"]["schemas"])
    # $refs point at #/components/schemas/X: resolve them within one document.
    jsonschema.validate(value, {"components": {"schemas": document}, **document[component]})


def test_a_queue_table_without_owner_answers_null_and_create_sends_queue_count(
    schema, admin_api, admin_user
):
    created = admin_api.post("/api/queue-tables/", {"name": "QT_X", "sort_order": "enq_time"})
    assert created.status_code == 201, created.content
    # The table comes with its exception queue, as the list counts it.
    listed = admin_api.get("/api/queue-tables/?q=QT_X").json()["results"][0]
    assert created.json()["queue_count"] == listed["queue_count"] == 1
    _validate(schema, "QueueTable", created.json())

    admin_user.queue_tables.update(owner=None)
    shown = admin_api.get("/api/queue-tables/QT_X/").json()

    assert shown["owner"] is None
    _validate(schema, "QueueTable", shown)


def test_rules_and_rule_sets_without_owner_and_blank_metadata_match_the_schema(schema, admin_api):
    from rules.models import Rule, RuleSet

    rule = admin_api.post("/api/rules/", {"name": "R1", "condition": ":msg.n = 1"})
    added = admin_api.post("/api/rule-sets/", {"name": "RS1"})
    member = admin_api.post("/api/rule-sets/RS1/add_rule/", {"rule": "R1"})
    assert (rule.status_code, added.status_code, member.status_code) == (201, 201, 201)
    Rule.objects.update(owner=None)
    RuleSet.objects.update(owner=None)

    shown = admin_api.get("/api/rules/R1/").json()
    rule_set = admin_api.get("/api/rule-sets/RS1/").json()

    # A rule written by hand has no generator metadata: "" for each of these choices.
    assert (shown["rule_type"], shown["streams_rule_type"], shown["subsetting_operation"]) == (
        "",
        "",
        "",
    )
    assert shown["owner"] is None and rule_set["owner"] is None
    _validate(schema, "Rule", shown)
    _validate(schema, "RuleSet", rule_set)
    _validate(schema, "RuleSet", member.json())


def test_generate_documents_200_for_a_dry_run_and_201_for_the_rules_made(schema, admin_api):
    documented = schema["paths"]["/api/rules/generate/"]["post"]["responses"]
    body = {"kind": "table", "table_name": "hr.emp"}

    dry = admin_api.post("/api/rules/generate/", {**body, "dry_run": True})
    made = admin_api.post("/api/rules/generate/", body)

    assert (dry.status_code, made.status_code) == (200, 201)
    assert {"200", "201"} <= set(documented)
    for code, component in (("200", "GeneratedRule"), ("201", "Rule")):
        body = documented[code]["content"]["application/json"]["schema"]
        assert body == {"type": "array", "items": {"$ref": f"#/components/schemas/{component}"}}
    assert "201" in schema["paths"]["/api/rule-sets/{id}/add_rule/"]["post"]["responses"]
    assert "200" not in schema["paths"]["/api/rule-sets/{id}/add_rule/"]["post"]["responses"]
    for rule in made.json():
        _validate(schema, "Rule", rule)


def test_a_message_never_moved_has_a_null_original_queue(schema, admin_api, queue, enqueue_some):
    enqueue_some(queue, {"n": 1})

    [message] = admin_api.get("/api/messages/").json()["results"]

    assert message["original_queue"] is None
    _validate(schema, "Message", message)


def test_a_propagation_without_rule_sets_and_errors_matches_the_schema(
    schema, admin_api, mc_table, sc_table, make_queue
):
    make_queue("SRC", mc_table)
    make_queue("DST", sc_table)
    created = admin_api.post(
        "/api/propagations/",
        {"name": "P1", "source_queue": "SRC", "destination_queue": "DST"},
    )
    assert created.status_code == 201, created.content
    assert admin_api.post("/api/propagations/P1/disable/").status_code == 200

    attention = admin_api.get("/api/attention/").json()

    assert created.json()["positive_rule_set"] is None
    _validate(schema, "Propagation", created.json())
    [brief] = attention["disabled"]
    assert brief["last_error_at"] is None
    _validate(schema, "Attention", attention)


def test_a_gateway_job_on_a_single_consumer_queue_has_a_null_subscriber(schema, admin_api):
    from gateway import services as gw
    from queues import services as qs

    admin = User.objects.get(username="alice")
    table = qs.queue_table_create(user=admin, name="QT_GW", sort_order="enq_time")
    qs.queue_create(user=admin, name="OUTQ", queue_table=table)
    gw.ensure_default_agent()
    link = gw.link_create(
        user=admin, name="RABBIT", link_type="AMQP", properties={"host": "127.0.0.1", "port": 1}
    )
    gw.foreign_queue_register(user=admin, name="IN_Q", link=link, provider_queue="mgw.in")
    created = admin_api.post(
        "/api/gateway/jobs/",
        {
            "job_name": "J_IN",
            "propagation_type": "INBOUND",
            "source": "IN_Q@RABBIT",
            "destination": "OUTQ",
        },
    )

    assert created.status_code == 201, created.content
    assert created.json()["subscriber"] is None
    _validate(schema, "Job", created.json())
