"""Transformation services on real PostgreSQL: declarative ones attach to DML rules only, custom
ones name a registered callable, bad input is refused naming the field and writes nothing, each
change leaves one change-log entry, and DBA_STREAMS_TRANSFORMATIONS lists them."""

from __future__ import annotations

from typing import Any

import pytest

from core.exceptions import DomainError
from core.models import ChangeLogEntry
from rules import selectors, services
from rules.lang import message_from_json
from rules.models import (
    CustomTransformation,
    DbaStreamsTransformation,
    DeclarativeTransformation,
    Rule,
    RuleSet,
)

SRC = "DBS1.EXAMPLE.COM"


@pytest.fixture
def rules(admin_user) -> dict[str, Rule]:
    """hr.employees table rules (DML and DDL), the seed's hr.regions subset rules, a message
    rule and a hand-written DML rule, with every positive rule in POS_RULES."""
    table = services.rules_generate(
        user=admin_user,
        kind="table",
        params={"table_name": "hr.employees", "include_ddl": True, "source_database": SRC},
        rule_set="POS_RULES",
    )
    subset = services.rules_generate(
        user=admin_user,
        kind="subset",
        params={"table_name": "hr.regions", "dml_condition": "region_id=2", "source_database": SRC},
        rule_set="POS_RULES",
    )
    message = services.rules_generate(
        user=admin_user,
        kind="message",
        params={"message_type": "app.orders", "rule_condition": ":msg.region = 'EU'"},
        rule_set="MSG_RULES",
    )
    by_hand = services.rule_create(
        user=admin_user,
        name="BY_HAND",
        condition=":dml.get_object_owner() = 'OE'",
        evaluation_context=services.streams_evaluation_context(),
    )
    ddl_by_hand = services.rule_create(
        user=admin_user,
        name="DDL_BY_HAND",
        condition=":ddl.get_object_owner() = 'OE'",
        evaluation_context=services.streams_evaluation_context(),
    )
    return {
        "dml": next(r for r in table if r.rule_type == "DML"),
        "ddl": next(r for r in table if r.rule_type == "DDL"),
        **{f"subset_{r.subsetting_operation.lower()}": r for r in subset},
        "message": message[0],
        "by_hand": by_hand,
        "ddl_by_hand": ddl_by_hand,
    }


def _add(user: Any, rule: Rule, declarative_type: str, **params: Any) -> DeclarativeTransformation:
    return services.transformation_add_declarative(
        user=user, rule=rule, declarative_type=declarative_type, **params
    )


def _entries(verb: str) -> list[ChangeLogEntry]:
    return list(ChangeLogEntry.objects.filter(verb=verb).order_by("id"))


# --- adding and removing ---------------------------------------------------------------------------


def test_a_declarative_transformation_is_stored_with_canonical_names(admin_user, rules):
    row = _add(
        admin_user,
        rules["dml"],
        "RENAME TABLE",
        from_table_name="hr.employees",
        to_table_name='hr."Staff"',
    )
    row.refresh_from_db()
    assert (row.from_table_name, row.to_table_name, row.step_number) == (
        "HR.EMPLOYEES",
        "HR.Staff",
        0,
    )
    [entry] = _entries("transformation_add_declarative")
    assert (entry.user, entry.object_type, entry.object_id) == (
        admin_user,
        "rules.declarativetransformation",
        str(row.pk),
    )
    assert entry.after["rule"] == rules["dml"].name


def test_add_column_defaults_to_the_new_values(admin_user, rules):
    row = _add(admin_user, rules["dml"], "ADD COLUMN", column_name="src", column_value="dbs1")
    assert (row.column_name, row.column_value, row.value_type) == ("SRC", "dbs1", "NEW")


def test_a_hand_written_dml_rule_takes_declarative_transformations(admin_user, rules):
    row = _add(admin_user, rules["by_hand"], "DELETE COLUMN", column_name="email")
    assert row.rule == rules["by_hand"]


def test_removing_a_transformation_deletes_it_and_logs_it(admin_user, rules):
    row = _add(admin_user, rules["dml"], "DELETE COLUMN", column_name="EMAIL")
    services.transformation_remove(user=admin_user, transformation=row)
    assert not DeclarativeTransformation.objects.exists()
    [entry] = _entries("transformation_remove")
    assert entry.before["declarative_type"] == "DELETE COLUMN"
    assert entry.object_repr == f"DELETE COLUMN on {rules['dml'].name}"


def test_changing_transformations_bumps_the_rule_sets_holding_the_rule(admin_user, rules):
    before = RuleSet.objects.get(name="POS_RULES").updated
    _add(admin_user, rules["dml"], "DELETE COLUMN", column_name="EMAIL")
    assert RuleSet.objects.get(name="POS_RULES").updated > before


@pytest.mark.parametrize(
    ("rule_key", "declarative_type", "params", "field"),
    [
        ("dml", "SHUFFLE", {}, "declarative_type"),
        ("dml", "KEEP COLUMNS", {}, "column_list"),
        ("dml", "DELETE COLUMN", {}, "column_name"),
        ("dml", "RENAME COLUMN", {"from_column_name": "A"}, "to_column_name"),
        ("dml", "ADD COLUMN", {"column_name": "A", "column_value": {"a": 1}}, "column_value"),
        ("dml", "RENAME TABLE", {"from_table_name": "EMPLOYEES", "to_table_name": "HR.X"},
         "from_table_name"),
        ("dml", "RENAME SCHEMA", {"from_schema_name": "HR"}, "to_schema_name"),
        ("dml", "DELETE COLUMN", {"column_name": "A", "value_type": "ALL"}, "value_type"),
        ("dml", "DELETE COLUMN", {"column_name": "A", "bogus": 1}, "bogus"),
        ("ddl", "DELETE COLUMN", {"column_name": "A"}, "rule"),
        ("ddl_by_hand", "DELETE COLUMN", {"column_name": "A"}, "rule"),
        ("message", "DELETE COLUMN", {"column_name": "A"}, "rule"),
    ],
)  # fmt: skip
def test_bad_declarative_input_is_refused_naming_the_field(
    admin_user, rules, rule_key, declarative_type, params, field
):
    with pytest.raises(DomainError) as exc:
        _add(admin_user, rules[rule_key], declarative_type, **params)
    assert exc.value.field == field
    assert not DeclarativeTransformation.objects.exists()
    assert not _entries("transformation_add_declarative")


def test_a_ddl_rule_is_refused_saying_why(admin_user, rules):
    with pytest.raises(DomainError, match="a DDL rule: declarative transformations change row"):
        _add(admin_user, rules["ddl"], "DELETE COLUMN", column_name="A")


def test_a_monitor_cannot_add_transformations(monitor_user, rules):
    with pytest.raises(DomainError) as exc:
        _add(monitor_user, rules["dml"], "DELETE COLUMN", column_name="A")
    assert exc.value.status_code == 403


# --- custom ----------------------------------------------------------------------------------------


def test_a_custom_transformation_names_a_registered_callable(admin_user, rules):
    row = services.custom_transformation_set(
        user=admin_user, rule=rules["ddl"], function="UPPER_LAST_NAME"
    )
    assert row.function == "UPPER_LAST_NAME"
    services.custom_transformation_set(
        user=admin_user, rule=rules["ddl"], function="MASK_PHONE_NUMBER"
    )
    assert CustomTransformation.objects.get(rule=rules["ddl"]).function == "MASK_PHONE_NUMBER"
    first, second = _entries("custom_transformation_set")
    assert (first.action, second.action) == ("create", "update")
    assert second.before["function"] == "UPPER_LAST_NAME"


@pytest.mark.parametrize(
    "function",
    ["", "upper_last_name", "rules.transformations_examples.upper_last_name", "os.system"],
)
def test_a_custom_name_not_in_the_registry_is_refused(admin_user, rules, function):
    with pytest.raises(DomainError) as exc:
        services.custom_transformation_set(user=admin_user, rule=rules["dml"], function=function)
    assert exc.value.field == "function"
    assert not CustomTransformation.objects.exists()
    assert not _entries("custom_transformation_set")


def test_the_registry_is_the_setting(admin_user, rules, settings):
    settings.AQ_TRANSFORMATIONS = {"ONLY_THIS": "rules.transformations_examples.upper_last_name"}
    with pytest.raises(DomainError):
        services.custom_transformation_set(
            user=admin_user, rule=rules["dml"], function="UPPER_LAST_NAME"
        )
    services.custom_transformation_set(user=admin_user, rule=rules["dml"], function="ONLY_THIS")


def test_clearing_the_custom_transformation(admin_user, rules):
    services.custom_transformation_set(
        user=admin_user, rule=rules["dml"], function="UPPER_LAST_NAME"
    )
    services.custom_transformation_clear(user=admin_user, rule=rules["dml"])
    assert not CustomTransformation.objects.exists()
    [entry] = _entries("custom_transformation_clear")
    assert entry.before["function"] == "UPPER_LAST_NAME"
    with pytest.raises(DomainError) as exc:
        services.custom_transformation_clear(user=admin_user, rule=rules["dml"])
    assert exc.value.field == "rule"


# --- DBA_STREAMS_TRANSFORMATIONS -----------------------------------------------------------------


def test_the_view_lists_declarative_custom_and_subset_rows(admin_user, rules):
    dml = rules["dml"]
    _add(
        admin_user, dml, "RENAME SCHEMA", from_schema_name="hr", to_schema_name="hr2", step_number=2
    )
    _add(admin_user, dml, "KEEP COLUMNS", column_list=["employee_id", "salary"])
    services.custom_transformation_set(user=admin_user, rule=dml, function="UPPER_LAST_NAME")

    rows = {
        (r.transform_type, r.declarative_type or r.subsetting_operation): r
        for r in DbaStreamsTransformation.objects.all()
    }

    keep = rows[("DECLARATIVE TRANSFORMATION", "KEEP COLUMNS")]
    assert (keep.rule_name, keep.schema_name, keep.table_name) == (dml.name, "HR", "EMPLOYEES")
    assert (keep.value_type, keep.step_number, keep.rule_owner) == ("*", 0, "alice")
    schema = rows[("DECLARATIVE TRANSFORMATION", "RENAME SCHEMA")]
    assert (schema.from_schema_name, schema.to_schema_name, schema.step_number) == ("HR", "HR2", 2)
    custom = rows[("CUSTOM TRANSFORMATION", None)]
    assert (custom.rule_name, custom.user_function_name) == (dml.name, "UPPER_LAST_NAME")
    subset = {k[1]: r for k, r in rows.items() if k[0] == "SUBSET RULE"}
    assert set(subset) == {"INSERT", "UPDATE", "DELETE"}
    assert subset["INSERT"].rule_name == rules["subset_insert"].name
    assert subset["INSERT"].dml_condition == "region_id=2"
    assert (subset["INSERT"].schema_name, subset["INSERT"].table_name) == ("HR", "REGIONS")


# --- the specs the pipeline runs -------------------------------------------------------------------


def test_the_rule_set_specs_run_the_stored_transformations(admin_user, rules):
    dml = rules["dml"]
    _add(admin_user, dml, "RENAME COLUMN", from_column_name="salary", to_column_name="pay")
    _add(admin_user, dml, "KEEP COLUMNS", column_list=["EMPLOYEE_ID", "SALARY", "LAST_NAME"])
    services.custom_transformation_set(user=admin_user, rule=dml, function="UPPER_LAST_NAME")
    positive = RuleSet.objects.get(name="POS_RULES")

    specs = selectors.rule_set_transformations(positive)
    assert set(specs) == {
        dml.name,
        rules["subset_insert"].name,
        rules["subset_update"].name,
        rules["subset_delete"].name,
    }
    lcr = message_from_json(
        {
            "kind": "row_lcr",
            "source_database_name": SRC,
            "command_type": "UPDATE",
            "object_owner": "HR",
            "object_name": "EMPLOYEES",
            "old_values": {"EMPLOYEE_ID": 100, "SALARY": 1, "EMAIL": "x", "LAST_NAME": "King"},
            "new_values": {"SALARY": 2, "LAST_NAME": "Kong"},
        }
    )
    result = selectors.rule_set_apply(lcr, positive=positive, negative=None)

    assert (result["decision"], result["rule"]) == ("PERFORM", dml.name)
    assert result["message_out"]["old_values"] == {
        "EMPLOYEE_ID": 100,
        "PAY": 1,
        "LAST_NAME": "KING",
    }
    assert result["message_out"]["new_values"] == {"PAY": 2, "LAST_NAME": "KONG"}
    assert [s["detail"] for s in result["steps"]] == [
        "KEEP COLUMNS EMPLOYEE_ID, SALARY, LAST_NAME (*)",
        "RENAME COLUMN SALARY → PAY (*)",
        "UPPER_LAST_NAME",
    ]


def test_a_custom_name_dropped_from_the_registry_is_reported_when_specs_are_built(
    admin_user, rules, settings
):
    services.custom_transformation_set(
        user=admin_user, rule=rules["dml"], function="UPPER_LAST_NAME"
    )
    settings.AQ_TRANSFORMATIONS = {}
    with pytest.raises(DomainError) as exc:
        selectors.rule_set_transformations(RuleSet.objects.get(name="POS_RULES"))
    assert exc.value.field == "function"
