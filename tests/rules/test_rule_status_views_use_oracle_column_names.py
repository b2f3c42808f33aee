"""The rules status views (``/api/status/<view>/``) read the PostgreSQL views and answer with
Oracle's column names, showing what the generators made."""

from __future__ import annotations

from tests.rules.lang_seed import G9, G12_SUBSET_INSERT, SCHEMA_HR_DML

SRC = "dbs1.example.com"


def rows(api, view: str) -> list[dict]:  # type: ignore[no-untyped-def]
    response = api.get(f"/api/status/{view}/", {"per_page": 500})
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def test_dba_streams_rules_shows_the_generated_rules(monitor_api, admin_api):
    admin_api.post(
        "/api/rules/generate/",
        {
            "kind": "exclude_table",
            "table_name": "hr.job_history",
            "source_database": SRC,
            "rule_set": "HR_POS",
            "negative_rule_set": "HR_NEG",
        },
    )
    admin_api.post(
        "/api/rules/generate/",
        {
            "kind": "subset",
            "table_name": "hr.regions",
            "dml_condition": "region_id=2",
            "source_database": SRC,
            "rule_set": "SUB_RS",
        },
    )
    admin_api.post("/api/rules/", {"name": "HANDMADE", "condition": ":dml.get_tag() IS NULL"})

    got = rows(monitor_api, "dba_streams_rules")

    by_condition = {r["rule_condition"]: r for r in got}
    assert "HANDMADE" not in {r["rule_name"] for r in got}  # made by hand: not a streams rule
    schema = by_condition[SCHEMA_HR_DML]
    assert {
        k: schema[k]
        for k in (
            "streams_rule_type",
            "schema_name",
            "object_name",
            "include_tagged_lcr",
            "source_database",
            "rule_type",
            "subsetting_operation",
            "rule_set_name",
            "same_rule_condition",
        )
    } == {
        "streams_rule_type": "SCHEMA",
        "schema_name": "HR",
        "object_name": None,
        "include_tagged_lcr": "NO",
        "source_database": "DBS1.EXAMPLE.COM",
        "rule_type": "DML",
        "subsetting_operation": None,
        "rule_set_name": "HR_POS",
        "same_rule_condition": "YES",
    }
    table = by_condition[G9]
    assert (table["streams_rule_type"], table["object_name"], table["include_tagged_lcr"]) == (
        "TABLE",
        "JOB_HISTORY",
        "YES",
    )
    assert table["rule_set_name"] == "HR_NEG"
    subset = by_condition[G12_SUBSET_INSERT]
    assert (subset["streams_rule_type"], subset["subsetting_operation"]) == ("SUBSET", "INSERT")
    assert subset["dml_condition"] == "region_id=2"
    assert sorted(r["subsetting_operation"] for r in got if r["rule_set_name"] == "SUB_RS") == [
        "DELETE",
        "INSERT",
        "UPDATE",
    ]
    assert {
        "streams_type",
        "streams_name",
        "rule_set_owner",
        "rule_owner",
        "rule_set_type",
        "message_type_owner",
        "message_type_name",
        "message_rule_variable",
        "original_rule_condition",
    } <= set(schema)
    assert "rule_id" not in schema  # a surrogate key, not an Oracle column


def test_dba_rules_rule_sets_and_members(monitor_api, seed_sets):
    rules = {r["rule_name"]: r for r in rows(monitor_api, "dba_rules")}
    sets = {r["rule_set_name"]: r for r in rows(monitor_api, "dba_rule_sets")}
    members = rows(monitor_api, "dba_rule_set_rules")

    assert rules["JOB_HISTORY_NEG"]["rule_condition"] == G9
    assert rules["JOB_HISTORY_NEG"]["rule_owner"] == "alice"
    assert rules["JOB_HISTORY_NEG"]["rule_evaluation_context_name"] == "STREAMS$_EVALUATION_CONTEXT"
    assert set(rules["JOB_HISTORY_NEG"]) == {
        "rule_owner",
        "rule_name",
        "rule_condition",
        "rule_evaluation_context_owner",
        "rule_evaluation_context_name",
        "rule_action_context",
        "rule_comment",
    }
    assert set(sets) == {"N_SET", "P_SET", "EMPTY_SET"}
    assert sets["P_SET"]["rule_set_eval_context_name"] == "STREAMS$_EVALUATION_CONTEXT"
    assert sorted(
        (m["rule_set_name"], m["rule_name"], m["rule_set_rule_enabled"]) for m in members
    ) == [
        ("N_SET", "JOB_HISTORY_NEG", "ENABLED"),
        ("P_SET", "HR_SCHEMA_POS", "ENABLED"),
    ]


def test_dba_evaluation_context_vars_shows_message_rule_variables(
    monitor_api, admin_api, streams_context
):
    [rule] = admin_api.post(
        "/api/rules/generate/",
        {
            "kind": "message",
            "message_type": "strmadmin.region_pri_msg",
            "rule_condition": ":msg.region = 'EUROPE'",
        },
    ).json()

    got = rows(monitor_api, "dba_evaluation_context_vars")

    by_var = {(r["evaluation_context_name"], r["variable_name"]): r for r in got}
    assert by_var[("STREAMS$_EVALUATION_CONTEXT", "DML")]["variable_type"] == "SYS.LCR$_ROW_RECORD"
    assert by_var[("STREAMS$_EVALUATION_CONTEXT", "DDL")]["variable_type"] == "SYS.LCR$_DDL_RECORD"
    var = by_var[(rule["evaluation_context"], rule["message_rule_variable"])]
    assert var["variable_type"] == "STRMADMIN.REGION_PRI_MSG"
    streams = {r["rule_name"]: r for r in rows(monitor_api, "dba_streams_rules")}
    assert streams[rule["name"]]["message_rule_variable"] == rule["message_rule_variable"]
    assert streams[rule["name"]]["message_type_name"] == "STRMADMIN.REGION_PRI_MSG"


def test_dba_streams_transformations_lists_subset_rules(monitor_api, admin_api):
    admin_api.post(
        "/api/rules/generate/",
        {"kind": "subset", "table_name": "hr.regions", "dml_condition": "region_id=2"},
    )

    got = rows(monitor_api, "dba_streams_transformations")

    assert sorted((r["transform_type"], r["subsetting_operation"]) for r in got) == [
        ("SUBSET RULE", "DELETE"),
        ("SUBSET RULE", "INSERT"),
        ("SUBSET RULE", "UPDATE"),
    ]
    assert {(r["schema_name"], r["table_name"], r["dml_condition"]) for r in got} == {
        ("HR", "REGIONS", "region_id=2")
    }


def test_the_status_page_shows_the_rules_views_with_oracle_headers(monitor_client, seed_sets):
    html = monitor_client.get("/status/?view=dba_rule_set_rules").content.decode()

    assert "RULE_SET_NAME" in html and "RULE_SET_RULE_ENABLED" in html
    assert "JOB_HISTORY_NEG" in html and "P_SET" in html
