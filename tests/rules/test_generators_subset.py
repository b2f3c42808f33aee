"""Subset rules (spec/rules.md §3.5): always three, positive only, DML only, each carrying its
row-migration operation in the action context."""

from __future__ import annotations

import pytest

from rules.lang.generators import (
    ROW_SUBSET_ACTION,
    GeneratorError,
    RuleType,
    StreamsRuleType,
    subset_condition_columns,
    subset_rules,
)


def _regions(**kwargs):
    return subset_rules(table_name="hr.regions", dml_condition="region_id=2", **kwargs)


def test_subset_rules_come_as_insert_update_delete_with_their_action_context():
    rules = _regions(source_database="dbs1.example.com")
    assert [r.action_context for r in rules] == [
        {ROW_SUBSET_ACTION: "INSERT"},
        {ROW_SUBSET_ACTION: "UPDATE"},
        {ROW_SUBSET_ACTION: "DELETE"},
    ]
    for rule in rules:
        assert rule.streams_rule_type == StreamsRuleType.SUBSET
        assert rule.rule_type == RuleType.DML
        assert (rule.schema, rule.object) == ("HR", "REGIONS")
        assert rule.dml_condition == "region_id=2"
        assert rule.source_database == "DBS1.EXAMPLE.COM"
        assert rule.inclusion_rule is True


def test_subset_rules_with_tagged_lcrs_and_no_source_drop_both_tests():
    insert, _, _ = _regions(include_tagged_lcr=True)
    assert insert.condition.startswith(
        ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND "
        ":dml.get_command_type() IN ('UPDATE','INSERT') AND "
    )
    assert "is_null_tag" not in insert.condition
    assert "get_source_database_name" not in insert.condition


def test_subset_rules_are_refused_for_a_negative_rule_set():
    with pytest.raises(GeneratorError) as info:
        _regions(inclusion_rule=False)
    assert info.value.parameter == "inclusion_rule"
    assert "positive" in str(info.value)


def test_subset_rules_are_refused_for_ddl():
    with pytest.raises(GeneratorError) as info:
        _regions(include_ddl=True)
    assert info.value.parameter == "streams_type"
    assert "ADD_TABLE_RULES" in str(info.value)


@pytest.mark.parametrize("condition", ["", "   "])
def test_subset_rules_need_a_dml_condition(condition):
    with pytest.raises(GeneratorError) as info:
        subset_rules(table_name="hr.regions", dml_condition=condition)
    assert info.value.parameter == "dml_condition"


def test_a_dml_condition_names_columns_not_variables():
    with pytest.raises(GeneratorError) as info:
        subset_rules(table_name="hr.regions", dml_condition=":dml.region_id = 2")
    assert info.value.parameter == "dml_condition"
    assert "column 1" in str(info.value)


def test_a_dml_condition_without_a_column_is_refused():
    with pytest.raises(GeneratorError):
        subset_rules(table_name="hr.regions", dml_condition="1 = 1")


def test_a_column_compared_with_no_constant_needs_its_type():
    with pytest.raises(GeneratorError) as info:
        subset_rules(table_name="hr.regions", dml_condition="region_id IS NULL")
    assert "REGION_ID" in str(info.value)
    insert, _, _ = subset_rules(
        table_name="hr.regions",
        dml_condition="region_id IS NULL",
        column_types={"region_id": "NUMBER"},
    )
    assert "(:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NULL)" in insert.condition


def test_the_accessor_follows_the_constant_unless_the_type_is_given():
    _, update, _ = subset_rules(table_name="hr.employees", dml_condition="last_name = 'King'")
    assert update.condition.endswith(
        "(:dml.get_value('NEW','\"LAST_NAME\"').AccessVarchar2() = 'King')"
    )
    _, update, _ = subset_rules(
        table_name="hr.employees",
        dml_condition="department_id = '50'",
        column_types={"DEPARTMENT_ID": "number(4)"},
    )
    assert update.condition.endswith(
        "(:dml.get_value('NEW','\"DEPARTMENT_ID\"').AccessNumber() = '50')"
    )


def test_an_unsupported_column_type_is_refused():
    with pytest.raises(GeneratorError) as info:
        _regions(column_types={"region_id": "BLOB"})
    assert info.value.parameter == "column_types"


def test_constants_on_the_left_and_functions_give_the_type():
    _, update, _ = subset_rules(table_name="hr.regions", dml_condition="2 = region_id")
    assert update.condition.endswith("(2 = :dml.get_value('NEW','\"REGION_ID\"').AccessNumber())")
    _, update, _ = subset_rules(table_name="hr.regions", dml_condition="region_id IN (1, 2)")
    assert "(:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IN (1, 2))" in update.condition
    _, update, _ = subset_rules(table_name="hr.t", dml_condition="HEXTORAW('0A') = flag")
    assert "(HEXTORAW('0A') = :dml.get_value('NEW','\"FLAG\"').AccessRaw())" in update.condition
    _, update, _ = subset_rules(table_name="hr.t", dml_condition="flag = HEXTORAW('0A')")
    assert ".AccessRaw() = HEXTORAW('0A')" in update.condition
    _, update, _ = subset_rules(table_name="hr.locations", dml_condition="UPPER(city) = 'ROMA'")
    assert "UPPER(:dml.get_value('NEW','\"CITY\"').AccessVarchar2()) = 'ROMA'" in update.condition


def test_a_date_column_compares_with_an_iso_string_when_its_type_is_given():
    _, update, _ = subset_rules(
        table_name="hr.employees",
        dml_condition="hire_date >= '2020-01-01'",
        column_types={"hire_date": "DATE"},
    )
    assert update.condition.endswith(
        "(:dml.get_value('NEW','\"HIRE_DATE\"').AccessDate() >= '2020-01-01')"
    )


def test_several_columns_are_each_guarded_inferred():
    # [INFER] the seed shows single-column conditions only; several columns get one guard each.
    insert, update, delete = subset_rules(
        table_name="hr.employees",
        dml_condition="department_id = 50 and salary >= 1000",
        include_tagged_lcr=True,
    )
    n_dept = ":dml.get_value('NEW','\"DEPARTMENT_ID\"')"
    n_sal = ":dml.get_value('NEW','\"SALARY\"')"
    assert f"({n_dept} IS NOT NULL) AND ({n_sal} IS NOT NULL) AND " in update.condition
    assert f"({n_dept}.AccessNumber() = 50 and {n_sal}.AccessNumber() >= 1000)" in update.condition
    o_dept = ":dml.get_value('OLD','\"DEPARTMENT_ID\"')"
    o_sal = ":dml.get_value('OLD','\"SALARY\"')"
    assert (
        f"(({o_dept}.AccessNumber() IS NULL) OR ({o_sal}.AccessNumber() IS NULL)) AND NOT EXISTS"
        in insert.condition
    )
    assert f"(({n_dept}.AccessNumber() IS NULL) OR ({n_sal}.AccessNumber() IS NULL))" in (
        delete.condition
    )


def test_a_dml_condition_the_condition_language_cannot_read_is_refused_at_its_position():
    with pytest.raises(GeneratorError) as info:
        subset_rules(
            table_name="hr.regions", dml_condition=" region_id = 2 and\n  foo(region_id) = 1"
        )
    assert str(info.value) == (
        "dml_condition: line 2, column 3: unknown function FOO; "
        "the functions are HEXTORAW, LOWER, UPPER"
    )
    with pytest.raises(GeneratorError) as info:
        subset_rules(
            table_name="hr.regions",
            dml_condition="region_id = 2 and name like",
            column_types={"name": "VARCHAR2(30)"},
        )
    assert "line 1, column 28" in str(info.value)


def test_a_dml_condition_with_an_unexpected_character_names_its_position():
    with pytest.raises(GeneratorError) as info:
        subset_rules(table_name="hr.regions", dml_condition="region_id = 2 or\n region_id ~ 3")
    assert "'~' at line 2, column 12" in str(info.value)


def test_the_columns_to_log_supplementally_are_the_condition_columns():
    assert subset_condition_columns("region_id=2") == ["REGION_ID"]
    assert subset_condition_columns(
        "UPPER(city) = 'ROMA' or \"Zip\" like '0%' or city is null"
    ) == ["CITY", "Zip"]


def test_every_accessor_is_one_the_condition_language_evaluates():
    from rules.lang.generators import _ACCESSORS
    from rules.lang.values import ANYDATA_ACCESSORS

    assert {a.upper() for a in _ACCESSORS.values()} <= set(ANYDATA_ACCESSORS)
