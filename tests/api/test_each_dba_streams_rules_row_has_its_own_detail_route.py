"""DBA_STREAMS_RULES shows a rule once per rule set it is in; each of those rows is reachable on
its own through /api/status/dba_streams_rules/<key>/ (the rule id alone answered 500)."""

from __future__ import annotations


def test_a_rule_in_two_rule_sets_is_two_rows_each_with_its_detail(admin_api, monitor_api):
    made = admin_api.post(
        "/api/rules/generate/", {"kind": "table", "table_name": "hr.emp", "rule_set": "SET_A"}
    )
    assert made.status_code == 201, made.content
    rule = made.json()[0]["name"]
    assert admin_api.post("/api/rule-sets/", {"name": "SET_B"}).status_code == 201
    assert admin_api.post("/api/rule-sets/SET_B/add_rule/", {"rule": rule}).status_code == 201

    listed = monitor_api.get("/api/status/dba_streams_rules/").json()["results"]
    rows = [r for r in listed if r["rule_name"] == rule]
    keys = monitor_api.get("/api/schema/?format=json").json()["paths"]

    assert sorted(r["rule_set_name"] for r in rows) == ["SET_A", "SET_B"]
    assert "/api/status/dba_streams_rules/{streams_rule_key}/" in keys
    from rules.models import DbaStreamsRule

    for row in DbaStreamsRule.objects.filter(rule_name=rule):
        detail = monitor_api.get(f"/api/status/dba_streams_rules/{row.pk}/")
        assert detail.status_code == 200, detail.content
        assert detail.json()["rule_set_name"] == row.rule_set_name
