"""Unknown functions, methods and variables, wrong argument counts and members a variable's kind
lacks are errors when the condition is parsed and validated (at save time), never when a message
is evaluated."""

from __future__ import annotations

import pytest

from rules.lang import STREAMS_VARIABLES, ConditionError, parse, validate
from tests.rules.lang_seed import AMERICAS, G1, G2, G6, G10, G12_SUBSET_INSERT, G15


def parse_error(text: str) -> ConditionError:
    with pytest.raises(ConditionError) as info:
        parse(text)
    return info.value


def validate_error(text: str, variables=None) -> ConditionError:
    cond = parse(text)
    with pytest.raises(ConditionError) as info:
        validate(cond, variables=variables)
    return info.value


@pytest.mark.parametrize(
    ("text", "needle", "words"),
    [
        ("SUBSTR(:msg.x, 1) = 'a'", "SUBSTR", "unknown function SUBSTR"),
        (":dml.get_owner() = 'HR'", "get_owner", "unknown member function GET_OWNER"),
        (
            ":dml.get_value('NEW','\"X\"').AccessBlob() IS NULL",
            "AccessBlob",
            "unknown ANYDATA function ACCESSBLOB",
        ),
        (":dml.get_value('NEW') IS NULL", "get_value", "GET_VALUE takes 2 or 3 arguments, not 1"),
        (":dml.get_object_owner('x') = 'HR'", "get_object_owner", "takes 0 arguments, not 1"),
        ("HEXTORAW('01', '02') = :dml.get_tag()", "HEXTORAW", "HEXTORAW takes 1 argument, not 2"),
        ("UPPER() = 'A'", "UPPER", "UPPER takes 1 argument, not 0"),
        (":dml.get_tag() = HEXTORAW('0G')", "'0G'", "HEXTORAW needs hexadecimal digits"),
        (":dml.get_value('MID','\"X\"') IS NULL", "'MID'", "must be 'OLD' or 'NEW'"),
        (":dml.get_value('NEW','\"X') IS NULL", "'\"X'", "must name a column"),
        (":dml.get_value('NEW','X','maybe') IS NULL", "'maybe'", "must be 'Y' or 'N'"),
        (":dml.get_value('NEW','\"X\"') = 2", "get_value", "returns ANYDATA"),
        (":dml.get_object_owner().AccessNumber() = 2", "AccessNumber", "cannot be called on"),
        (":dml.AccessNumber() = 2", "AccessNumber", "reads the result of GET_VALUE"),
        (":dml.get_value('NEW','\"X\"').region = 2", "region", "returns ANYDATA"),
        (":msg.region.get_tag() IS NULL", "get_tag", "attributes have no member functions"),
        ("'abc'.x = 1", "x", "a literal has no attributes"),
        (":msg.x LIKE 'a\\%' ESCAPE '\\\\'", "ESCAPE", "single character"),
        (":msg.x LIKE 'a\\b' ESCAPE '\\'", "'a\\b'", "must be followed by %, _ or itself"),
    ],
)
def test_parse_refuses_names_and_arguments_it_does_not_know(text, needle, words) -> None:
    err = parse_error(text)
    assert words in err.message
    offset = text.index(needle, 1 if needle == "ESCAPE" else 0)
    if needle == "ESCAPE":  # the error points at the escape literal after the keyword
        offset = text.index("'", offset)
    assert (err.line, err.column) == (1, offset + 1)


def test_method_names_and_keywords_are_case_insensitive() -> None:
    a = parse(":DML.GET_OBJECT_OWNER() = 'HR' AnD :dml.Get_Value('new', 'x', 'y') is NOT null")
    b = parse(":dml.get_object_owner() = 'HR' and :dml.get_value('NEW','x','Y') IS NOT NULL")
    # The literal arguments differ in case but are accepted either way.
    assert type(a) is type(b) and len(a.items) == len(b.items)


def test_unknown_variables_are_refused_given_the_evaluation_context() -> None:
    err = validate_error(G2, {"DML": "row_lcr"})
    assert err.message == "unknown variable :ddl; the variables are :dml"
    assert (err.line, err.column) == (1, G2.index(":ddl") + 1)


def test_the_streams_evaluation_context_accepts_the_system_rules() -> None:
    for text in (G1, G2, G6, G10, G12_SUBSET_INSERT):
        validate(parse(text), variables=STREAMS_VARIABLES)


def test_message_rules_validate_against_their_generated_variable() -> None:
    validate(parse(G15), variables={'"VAR$_52"': "user:strmadmin.region_pri_msg"})
    err = validate_error(AMERICAS, {'"VAR$_52"': "user:strmadmin.region_pri_msg"})
    assert 'unknown variable :"VAR$_56"' in err.message


def test_variable_names_follow_oracle_case_rules() -> None:
    # Plain names are upper-cased (:dml is :DML is :"DML"); quoted ones keep their case.
    validate(parse(":\"DML\".get_object_owner() = 'HR'"), variables={"dml": "row_lcr"})
    validate(parse(":Dml.get_object_owner() = 'HR'"), variables={":DML": "row_lcr"})
    err = validate_error(":\"dml\".get_object_owner() = 'HR'", {"dml": "row_lcr"})
    assert 'unknown variable :"dml"' in err.message


def test_get_object_type_on_a_row_lcr_is_refused() -> None:
    text = "(:dml.get_object_owner() = 'HR') and :dml.get_object_type() = 'TABLE'"
    err = validate_error(text)
    assert "GET_OBJECT_TYPE is a member function of DDL change records only" in err.message
    assert err.column == text.index("get_object_type") + 1
    validate(parse(text.replace(":dml", ":ddl")))


def test_get_value_on_a_ddl_lcr_is_refused() -> None:
    err = validate_error(":ddl.get_value('NEW','\"X\"') IS NULL", STREAMS_VARIABLES)
    assert "GET_VALUE is a member function of row change records only" in err.message


def test_change_records_have_no_attributes_and_messages_no_methods() -> None:
    assert "has no attribute REGION" in validate_error(":dml.region = 'X'").message
    err = validate_error(":msg.get_object_owner() = 'HR'")
    assert "is a user message" in err.message
    err = validate_error(':"VAR$_9".get_tag() IS NULL', {'"VAR$_9"': "user:t"})
    assert "is a user message" in err.message


def test_a_bare_change_record_cannot_be_compared() -> None:
    err = validate_error(":dml = 'HR'")
    assert ":dml is a change record" in err.message
    validate(parse(":dml IS NOT NULL"))  # testing whether it is bound is fine


def test_unknown_variable_kinds_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown variable kind"):
        validate(parse(G1), variables={"DML": "row"})
