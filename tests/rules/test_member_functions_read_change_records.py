"""The member functions of row and DDL change records, GET_VALUE with its ANYDATA accessors, and
attribute access on user messages (case-insensitive unless quoted)."""

from __future__ import annotations

import pytest

from rules.lang import UserMessage, bindings_for, compile_expr, parse
from tests.rules.lang_helpers import value_of
from tests.rules.lang_seed import ddl, row


def value(expr_text: str, message):
    """The value of an expression, read through ``expr IS NOT NULL`` as the tree's left side."""
    cond = parse(f"{expr_text} IS NULL")
    return compile_expr(cond.expr)(bindings_for(message))


def test_row_lcr_member_functions() -> None:
    lcr = row("UPDATE", "HR", "EMPLOYEES", tag=b"\x11", src="DBS9.EXAMPLE.COM")
    assert value(":dml.get_object_owner()", lcr) == "HR"
    assert value(":dml.GET_OBJECT_NAME()", lcr) == "EMPLOYEES"
    assert value(":dml.get_command_type()", lcr) == "UPDATE"
    assert value(":dml.get_source_database_name()", lcr) == "DBS9.EXAMPLE.COM"
    assert value(":dml.get_tag()", lcr) == b"\x11"
    assert value(":dml.is_null_tag()", lcr) == "N"
    assert value(":dml.is_null_tag()", row(tag=None)) == "Y"


def test_ddl_lcr_member_functions() -> None:
    lcr = ddl("CREATE INDEX", "INDEX", "HR", "C_IX", base_owner="HR", base_name="COUNTRIES")
    assert value(":ddl.get_object_type()", lcr) == "INDEX"
    assert value(":ddl.get_base_table_owner()", lcr) == "HR"
    assert value(":ddl.get_base_table_name()", lcr) == "COUNTRIES"
    assert value(":ddl.get_command_type()", lcr) == "CREATE INDEX"
    assert value(":ddl.is_null_tag()", lcr) == "Y"


def test_a_member_call_on_an_unbound_variable_is_null() -> None:
    assert value_of(":ddl.get_object_owner() = 'HR'", row()) is None
    assert (
        value_of(":dml.get_object_owner() IS NULL", ddl("DROP TABLE", "TABLE", "HR", "T")) is True
    )
    assert value_of(":msg.region = 'EUROPE'", row()) is None


def test_get_value_reads_old_and_new_values() -> None:
    lcr = row("UPDATE", old={"REGION_ID": 4, "NAME": "Asia"}, new={"REGION_ID": 2})
    assert value_of(":dml.get_value('OLD','\"REGION_ID\"').AccessNumber() = 4", lcr) is True
    assert value_of(":dml.get_value('NEW','\"REGION_ID\"').AccessNumber() = 2", lcr) is True
    assert value_of(":dml.get_value('old','\"NAME\"').AccessVarchar2() = 'Asia'", lcr) is True


def test_a_quoted_column_is_exact_and_a_plain_one_upper_cased() -> None:
    lcr = row("INSERT", new={"REGION_ID": 2, "MixedCase": 5})
    assert value_of(":dml.get_value('NEW','region_id').AccessNumber() = 2", lcr) is True
    assert value_of(":dml.get_value('NEW','\"region_id\"') IS NULL", lcr) is True
    assert value_of(":dml.get_value('NEW','\"MixedCase\"').AccessNumber() = 5", lcr) is True
    assert value_of(":dml.get_value('NEW','MixedCase') IS NULL", lcr) is True


def test_get_value_tells_an_absent_column_from_a_null_value() -> None:
    lcr = row("UPDATE", old={"REGION_ID": None}, new={"REGION_ID": 2})
    assert value_of(":dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL", lcr) is True
    assert value_of(":dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NULL", lcr) is True
    assert value_of(":dml.get_value('OLD','\"OTHER\"') IS NULL", lcr) is True


def test_new_falls_back_to_old_unless_use_old_is_n() -> None:
    lcr = row("UPDATE", old={"REGION_ID": 2}, new={"NAME": "x"})
    assert value_of(":dml.get_value('NEW','\"REGION_ID\"').AccessNumber() = 2", lcr) is True
    assert value_of(":dml.get_value('NEW','\"REGION_ID\"','Y').AccessNumber() = 2", lcr) is True
    assert value_of(":dml.get_value('NEW','\"REGION_ID\"','N') IS NULL", lcr) is True
    # OLD never falls back to NEW
    assert value_of(":dml.get_value('OLD','\"NAME\"') IS NULL", lcr) is True


def test_get_value_arguments_may_be_computed() -> None:
    lcr = row("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 3})
    assert (
        value_of(":dml.get_value(UPPER('new'),LOWER('REGION_ID')).AccessNumber() = 3", lcr) is True
    )
    assert value_of(":dml.get_value(:msg.x,'\"REGION_ID\"') IS NULL", lcr) is True


def test_anydata_accessors_convert_or_give_null() -> None:
    lcr = row("INSERT", new={"N": 7, "S": "12", "W": "word", "D": "2024-01-02", "NUL": None})
    assert value(":dml.get_value('NEW','N').AccessNumber()", lcr) == 7
    assert value(":dml.get_value('NEW','N').AccessVarchar2()", lcr) == "7"
    assert value(":dml.get_value('NEW','S').AccessNumber()", lcr) == 12
    assert value(":dml.get_value('NEW','W').AccessNumber()", lcr) is None
    assert value(":dml.get_value('NEW','D').AccessDate()", lcr).isoformat() == "2024-01-02T00:00:00"
    assert value(":dml.get_value('NEW','NUL').AccessVarchar2()", lcr) is None
    assert value(":dml.get_value('NEW','NUL')", lcr) is not None  # carried, though NULL


def test_user_message_attributes_are_case_insensitive_unless_quoted() -> None:
    m = UserMessage("T", {"Region": "EUROPE", "REGION_CODE": "EU"})
    assert value_of(":msg.region = 'EUROPE'", m) is True
    assert value_of(":msg.REGION = 'EUROPE'", m) is True
    assert value_of(":msg.\"Region\" = 'EUROPE'", m) is True
    assert value_of(':msg."region" IS NULL', m) is True
    assert value_of(":msg.region_code = 'EU'", m) is True


def test_when_keys_differ_only_in_case_the_upper_case_key_wins() -> None:
    m = UserMessage("T", {"region": "lower", "REGION": "upper", "Other": 1, "OTHER_": 2})
    assert value_of(":msg.region = 'upper'", m) is True
    assert value_of(":msg.\"region\" = 'lower'", m) is True


def test_a_missing_attribute_is_null() -> None:
    m = UserMessage("T", {"region": "EUROPE"})
    assert value_of(":msg.priority = 1", m) is None
    assert value_of(":msg.priority IS NULL", m) is True
    assert value_of(":msg.a.b.c IS NULL", m) is True


def test_a_scalar_payload_is_the_value_of_the_bare_variable() -> None:
    assert value_of(":msg = 'hello'", UserMessage("T", "hello")) is True
    assert value_of(":msg = 'hello'", UserMessage("T", {"x": 1})) is None
    assert value_of(":msg IS NULL", UserMessage("T", {"x": 1})) is False
    assert value_of(":msg IS NULL", row()) is True


@pytest.mark.parametrize("payload", [{"region": "EUROPE"}, {"REGION": "EUROPE"}])
def test_a_raw_payload_dict_bound_in_place_of_a_message_still_reads(payload) -> None:
    cond = parse(":msg.region = 'EUROPE'")
    from rules.lang import compile_python

    assert compile_python(cond)({"MSG": payload}) is True
