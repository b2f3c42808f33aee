"""Transformations through the API and the rule page: list, add and remove declarative ones, set
and clear the custom one, refusals are a 400 naming the field, a monitor may only look, and a rule
set's dry run shows the transformed message."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from rules import services
from rules.models import (
    CustomTransformation,
    DbaStreamsTransformation,
    DeclarativeTransformation,
    Rule,
)

SRC = "DBS1.EXAMPLE.COM"


@pytest.fixture
def names(admin_user) -> dict[str, str]:
    """hr.regions subset rules and hr.employees table rules (DML and DDL) in POS_RULES."""
    made = services.rules_generate(
        user=admin_user,
        kind="table",
        params={"table_name": "hr.employees", "include_ddl": True, "source_database": SRC},
        rule_set="POS_RULES",
    )
    made += services.rules_generate(
        user=admin_user,
        kind="subset",
        params={"table_name": "hr.regions", "dml_condition": "region_id=2", "source_database": SRC},
        rule_set="POS_RULES",
    )
    out = {r.rule_type.lower(): r.name for r in made if not r.subsetting_operation}
    out.update({r.subsetting_operation.lower(): r.name for r in made if r.subsetting_operation})
    return out


def _rule(name: str) -> Rule:
    return Rule.objects.get(name=name)


def _url(rule: str, tail: str = "transformations/") -> str:
    return f"/api/rules/{rule}/{tail}"


# --- API -------------------------------------------------------------------------------------------


def test_add_list_and_remove_declarative_transformations(admin_api, names):
    dml = names["dml"]
    added = admin_api.post(
        _url(dml),
        {
            "declarative_type": "RENAME COLUMN",
            "from_column_name": "salary",
            "to_column_name": "pay",
        },
    )
    assert added.status_code == 201, added.content
    assert added.json()["from_column_name"] == "SALARY"
    admin_api.post(
        _url(dml), {"declarative_type": "KEEP COLUMNS", "column_list": ["salary"], "step_number": 3}
    )

    listed = admin_api.get(_url(dml)).json()
    assert [t["declarative_type"] for t in listed["declarative"]] == [
        "RENAME COLUMN",
        "KEEP COLUMNS",
    ]
    assert (listed["custom"], listed["subsetting_operation"]) == (None, None)

    gone = admin_api.delete(_url(dml, f"transformations/{added.json()['id']}/"))
    assert gone.status_code == 204
    assert list(DeclarativeTransformation.objects.values_list("declarative_type", flat=True)) == [
        "KEEP COLUMNS"
    ]
    assert admin_api.delete(_url(dml, f"transformations/{added.json()['id']}/")).status_code == 404
    verbs = list(ChangeLogEntry.objects.values_list("verb", flat=True).order_by("id"))
    assert verbs[-3:] == [
        "transformation_add_declarative",
        "transformation_add_declarative",
        "transformation_remove",
    ]


def test_a_subset_rule_lists_its_row_migration(admin_api, names):
    assert admin_api.get(_url(names["insert"])).json()["subsetting_operation"] == "INSERT"


@pytest.mark.parametrize(
    ("rule", "body", "field"),
    [
        ("dml", {"declarative_type": "SHUFFLE COLUMNS"}, "declarative_type"),
        ("dml", {}, "declarative_type"),
        ("dml", {"declarative_type": "DELETE COLUMN"}, "column_name"),
        ("dml", {"declarative_type": "KEEP COLUMNS", "column_list": []}, "column_list"),
        ("dml", {"declarative_type": "RENAME TABLE", "from_table_name": "hr.a"}, "to_table_name"),
        ("dml", {"declarative_type": "ADD COLUMN", "column_name": "A", "column_value": [1]},
         "column_value"),
        ("dml", {"declarative_type": "DELETE COLUMN", "column_name": "A", "step_number": -1},
         "step_number"),
        ("dml", {"declarative_type": "DELETE COLUMN", "column_name": "A", "value_type": "x"},
         "value_type"),
        ("ddl", {"declarative_type": "DELETE COLUMN", "column_name": "A"}, "rule"),
    ],
)  # fmt: skip
def test_bad_declarative_input_is_a_400_naming_the_field(admin_api, names, rule, body, field):
    response = admin_api.post(_url(names[rule]), body)
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not DeclarativeTransformation.objects.exists()


def test_set_and_clear_the_custom_transformation(admin_api, names):
    dml = names["dml"]
    response = admin_api.put(_url(dml, "custom-transformation/"), {"function": "UPPER_LAST_NAME"})
    assert response.status_code == 200, response.content
    assert response.json()["custom"] == "UPPER_LAST_NAME"

    assert admin_api.delete(_url(dml, "custom-transformation/")).status_code == 204
    assert not CustomTransformation.objects.exists()
    second = admin_api.delete(_url(dml, "custom-transformation/"))
    assert second.status_code == 400
    assert "rule" in second.json()


@pytest.mark.parametrize("function", ["NOT_REGISTERED", "os.system", ""])
def test_a_custom_name_not_in_the_registry_is_a_400_on_function(admin_api, names, function):
    response = admin_api.put(_url(names["dml"], "custom-transformation/"), {"function": function})
    assert response.status_code == 400
    assert "function" in response.json()
    assert not CustomTransformation.objects.exists()


def test_a_monitor_may_list_but_not_change(monitor_api, admin_user, names):
    dml = names["dml"]
    row = services.transformation_add_declarative(
        user=admin_user, rule=_rule(dml), declarative_type="DELETE COLUMN", column_name="A"
    )
    assert monitor_api.get(_url(dml)).status_code == 200
    body = {"declarative_type": "DELETE COLUMN", "column_name": "B"}
    assert monitor_api.post(_url(dml), body).status_code == 403
    assert monitor_api.delete(_url(dml, f"transformations/{row.pk}/")).status_code == 403
    put = monitor_api.put(_url(dml, "custom-transformation/"), {"function": "UPPER_LAST_NAME"})
    assert put.status_code == 403
    assert DeclarativeTransformation.objects.count() == 1


def test_a_rule_set_dry_run_shows_row_migration_then_declarative_then_custom(admin_api, names):
    insert = names["insert"]
    admin_api.post(
        _url(insert),
        {
            "declarative_type": "RENAME COLUMN",
            "from_column_name": "REGION_NAME",
            "to_column_name": "LAST_NAME",
        },
    )
    admin_api.put(_url(insert, "custom-transformation/"), {"function": "UPPER_LAST_NAME"})
    message = {
        "kind": "row_lcr",
        "source_database_name": SRC,
        "command_type": "UPDATE",
        "object_owner": "HR",
        "object_name": "REGIONS",
        "tag": None,
        "old_values": {"REGION_ID": 4, "REGION_NAME": "Asia"},
        "new_values": {"REGION_ID": 2},
    }

    response = admin_api.post("/api/rule-sets/POS_RULES/transform/", {"message": message})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["decision"], body["rule"]) == ("PERFORM", insert)
    assert [s["kind"] for s in body["steps"]] == [
        "SUBSET RULE",
        "DECLARATIVE TRANSFORMATION",
        "CUSTOM TRANSFORMATION",
    ]
    out = body["message_out"]
    assert out["command_type"] == "INSERT"
    assert (out["old_values"], out["new_values"]) == ({}, {"REGION_ID": 2, "LAST_NAME": "ASIA"})
    assert body["message_in"]["command_type"] == "UPDATE"


def test_a_dry_run_discard_transforms_nothing(monitor_api, names):
    message = {
        "kind": "row_lcr",
        "source_database_name": SRC,
        "command_type": "UPDATE",
        "object_owner": "HR",
        "object_name": "REGIONS",
        "old_values": {"REGION_ID": 1},
        "new_values": {"REGION_ID": 1},
    }
    response = monitor_api.post("/api/rule-sets/POS_RULES/transform/", {"message": message})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["decision"], body["message_out"], body["steps"]) == ("DISCARD", None, [])


# --- the rule page ---------------------------------------------------------------------------------


def test_the_rule_page_lists_transformations_in_execution_order(admin_client, admin_user, names):
    rule = _rule(names["dml"])
    add = services.transformation_add_declarative
    add(user=admin_user, rule=rule, declarative_type="RENAME SCHEMA", from_schema_name="HR",
        to_schema_name="HR2")  # fmt: skip
    add(user=admin_user, rule=rule, declarative_type="KEEP COLUMNS", column_list=["A", "B"])
    services.custom_transformation_set(user=admin_user, rule=rule, function="MASK_PHONE_NUMBER")

    page = admin_client.get(f"/rules/{rule.pk}/").content.decode()

    keep, schema, custom = (
        page.index('data-declarative-type="KEEP COLUMNS"'),
        page.index('data-declarative-type="RENAME SCHEMA"'),
        page.index('data-transform-type="CUSTOM TRANSFORMATION"'),
    )
    assert keep < schema < custom
    assert 'id="add-declarative-transformation"' in page
    assert "MASK_PHONE_NUMBER" in page


def test_a_ddl_rule_page_offers_no_declarative_form(admin_client, names):
    page = admin_client.get(f"/rules/{_rule(names['ddl']).pk}/").content.decode()
    assert 'id="add-declarative-transformation"' not in page
    assert 'id="set-custom-transformation"' in page


def test_add_and_remove_from_the_rule_page(admin_client, names):
    rule = _rule(names["dml"])
    response = admin_client.post(
        f"/rules/{rule.pk}/transformations/add/",
        {"declarative_type": "ADD COLUMN", "column_name": "region", "column_value": "EMEA"},
    )
    assert response.status_code == 302
    row = DeclarativeTransformation.objects.get()
    assert (row.column_name, row.column_value, row.value_type) == ("REGION", "EMEA", "NEW")

    response = admin_client.post(f"/rules/{rule.pk}/transformations/{row.pk}/remove/")
    assert response.status_code == 302
    assert not DeclarativeTransformation.objects.exists()


def test_a_bad_page_form_is_a_400_naming_the_field(admin_client, names):
    rule = _rule(names["dml"])
    response = admin_client.post(
        f"/rules/{rule.pk}/transformations/add/",
        {"declarative_type": "RENAME COLUMN", "from_column_name": "A"},
    )
    assert response.status_code == 400
    assert b'data-field="to_column_name"' in response.content
    ddl = _rule(names["ddl"])
    response = admin_client.post(
        f"/rules/{ddl.pk}/transformations/add/",
        {"declarative_type": "DELETE COLUMN", "column_name": "A"},
    )
    assert response.status_code == 400
    assert b"DML rules only" in response.content
    assert not DeclarativeTransformation.objects.exists()


def test_set_and_clear_the_custom_transformation_from_the_page(admin_client, names):
    rule = _rule(names["dml"])
    bad = admin_client.post(f"/rules/{rule.pk}/transformations/custom/", {"function": "os.system"})
    assert bad.status_code == 400
    assert b'data-field="function"' in bad.content
    ok = admin_client.post(
        f"/rules/{rule.pk}/transformations/custom/", {"function": "UPPER_LAST_NAME"}
    )
    assert ok.status_code == 302
    assert (
        DbaStreamsTransformation.objects.get(
            transform_type="CUSTOM TRANSFORMATION"
        ).user_function_name
        == "UPPER_LAST_NAME"
    )
    admin_client.post(f"/rules/{rule.pk}/transformations/custom/clear/")
    assert not CustomTransformation.objects.exists()


def test_a_monitor_sees_the_section_without_forms(monitor_client, admin_user, names):
    rule = _rule(names["dml"])
    services.transformation_add_declarative(
        user=admin_user, rule=rule, declarative_type="DELETE COLUMN", column_name="A"
    )
    page = monitor_client.get(f"/rules/{rule.pk}/").content.decode()
    assert 'data-declarative-type="DELETE COLUMN"' in page
    assert 'id="add-declarative-transformation"' not in page
    response = monitor_client.post(
        f"/rules/{rule.pk}/transformations/add/",
        {"declarative_type": "DELETE COLUMN", "column_name": "B"},
    )
    assert response.status_code == 403
    assert DeclarativeTransformation.objects.count() == 1
