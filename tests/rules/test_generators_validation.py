"""What the generators refuse, and the naming rules they apply (spec/rules.md §1.4, §3.6, §3.8)."""

from __future__ import annotations

import pytest

from rules.lang.generators import (
    GeneratorError,
    global_rules,
    message_rule,
    schema_rules,
    table_rules,
)


def _error(fn, **kwargs) -> GeneratorError:
    with pytest.raises(GeneratorError) as info:
        fn(**kwargs)
    return info.value


# --- names ---------------------------------------------------------------------------------------


def test_lower_case_names_are_upper_cased_in_the_condition():
    (rule,) = table_rules(table_name="hr.locations", source_database="dbs1.example.com")
    assert "'HR'" in rule.condition and "'LOCATIONS'" in rule.condition
    assert "'DBS1.EXAMPLE.COM'" in rule.condition
    assert "'hr'" not in rule.condition


def test_quoted_names_keep_their_case():
    (rule,) = table_rules(table_name='"Hr"."Mixed.Case"', include_tagged_lcr=True)
    assert (rule.schema, rule.object) == ("Hr", "Mixed.Case")
    assert "get_object_name() = 'Mixed.Case'" in rule.condition


def test_a_table_name_without_its_schema_is_refused():
    err = _error(table_rules, table_name="locations")
    assert err.parameter == "table_name"
    assert "schema.table" in str(err)


@pytest.mark.parametrize("name", ["hr.loc'ations", "hr.", "hr.a.b", "1hr.t", ""])
def test_malformed_table_names_are_refused(name):
    assert _error(table_rules, table_name=name).parameter == "table_name"


def test_a_schema_rule_needs_a_schema():
    assert _error(schema_rules, schema_name="  ").parameter == "schema_name"


def test_a_malformed_source_database_is_refused():
    err = _error(global_rules, source_database="dbs1' or 'x'='x")
    assert err.parameter == "source_database"


def test_an_empty_source_database_is_null_as_in_plsql():
    assert global_rules(source_database="") == global_rules(source_database=None)


def test_no_dml_and_no_ddl_generates_no_rule():
    assert table_rules(table_name="hr.t", include_dml=False, include_ddl=False) == []


# --- and_condition -------------------------------------------------------------------------------


def test_and_condition_must_use_lcr():
    err = _error(table_rules, table_name="hr.t", and_condition="1 = 1")
    assert err.parameter == "and_condition"
    assert ":lcr" in str(err)


@pytest.mark.parametrize("variable", [":dml", ":ddl", ":msg", ":other"])
def test_and_condition_may_use_no_other_variable(variable):
    err = _error(
        table_rules,
        table_name="hr.t",
        and_condition=f":lcr.get_tag() = HEXTORAW('02') and {variable}.is_null_tag() = 'N'",
    )
    assert err.parameter == "and_condition"
    assert variable in str(err) and "column 37" in str(err)


def test_and_condition_lcr_is_found_in_any_case_and_only_outside_strings():
    (rule,) = table_rules(
        table_name="hr.t",
        include_tagged_lcr=True,
        and_condition=":LCR.get_object_name() != ':lcr'",
    )
    assert rule.condition.endswith("and (:dml.get_object_name() != ':lcr'))")


def test_a_ddl_only_member_in_and_condition_is_refused_for_the_dml_rule():
    err = _error(
        table_rules,
        table_name="hr.t",
        include_dml=True,
        include_ddl=True,
        and_condition=":lcr.get_object_type() = 'INDEX'",
    )
    assert err.parameter == "and_condition"
    assert "GET_OBJECT_TYPE" in str(err) and "include_dml => FALSE" in str(err)


def test_a_ddl_only_member_in_and_condition_is_accepted_for_the_ddl_rule_alone():
    rules = table_rules(
        table_name="hr.t",
        include_dml=False,
        include_ddl=True,
        include_tagged_lcr=True,
        and_condition=":lcr.get_object_type() = 'INDEX'",
    )
    assert [r.rule_type for r in rules] == ["DDL"]
    assert rules[0].condition.endswith("and (:ddl.get_object_type() = 'INDEX'))")


def test_a_row_only_member_in_and_condition_is_refused_for_the_ddl_rule():
    err = _error(
        schema_rules,
        schema_name="hr",
        include_dml=False,
        include_ddl=True,
        and_condition=":lcr.get_value('NEW','\"ID\"').AccessNumber() > 5",
    )
    assert "GET_VALUE" in str(err) and "include_ddl => FALSE" in str(err)


def test_an_unterminated_string_in_and_condition_names_its_position():
    err = _error(table_rules, table_name="hr.t", and_condition=":lcr.get_object_name() = 'X")
    assert err.parameter == "and_condition"
    assert "unterminated string literal at line 1, column 26" in str(err)


def test_a_syntax_error_in_and_condition_names_its_position_in_the_users_text():
    err = _error(
        table_rules, table_name="hr.t", and_condition="  :lcr.get_tag() = HEXTORAW('02') and"
    )
    assert err.parameter == "and_condition"
    assert str(err).startswith("and_condition: line 1, column 38: expected")


def test_an_unknown_member_in_and_condition_is_refused():
    err = _error(table_rules, table_name="hr.t", and_condition=":lcr.get_colour() = 'RED'")
    assert "line 1, column 6: unknown member function GET_COLOUR" in str(err)


def test_an_empty_and_condition_is_refused():
    assert _error(global_rules, and_condition=" ").parameter == "and_condition"


# --- message rules -------------------------------------------------------------------------------


def test_message_rule_condition_must_use_msg():
    err = _error(
        message_rule,
        message_type="strmadmin.region_pri_msg",
        rule_condition=":dml.region = 'EUROPE'",
        variable_number=1,
    )
    assert err.parameter == "rule_condition" and ":msg" in str(err)


def test_a_syntax_error_in_a_message_rule_condition_names_its_position():
    err = _error(
        message_rule,
        message_type="strmadmin.region_pri_msg",
        rule_condition=":msg.region = 'EUROPE' AND AND",
        variable_number=1,
    )
    assert str(err).startswith("rule_condition: line 1, column 28: ")


def test_message_rule_needs_a_qualified_type():
    err = _error(
        message_rule,
        message_type="region_pri_msg",
        rule_condition=":msg.region = 'EUROPE'",
        variable_number=1,
    )
    assert err.parameter == "message_type"


@pytest.mark.parametrize("number", [0, -3, True, "52"])
def test_message_rule_needs_a_positive_variable_number(number):
    err = _error(
        message_rule,
        message_type="strmadmin.region_pri_msg",
        rule_condition=":msg.region = 'EUROPE'",
        variable_number=number,
    )
    assert err.parameter == "variable_number"


def test_message_rule_keeps_literal_text_and_rewrites_every_msg():
    rule = message_rule(
        message_type="strmadmin.region_pri_msg",
        rule_condition=":msg.region = ':msg' OR :MSG.priority  =  '1'",
        variable_number=7,
        inclusion_rule=False,
    )
    assert rule.condition == ":\"VAR$_7\".region = ':msg' OR :\"VAR$_7\".priority  =  '1'"
    assert rule.inclusion_rule is False
