"""A malformed condition gets a ConditionError naming the line, the column and what was expected;
the position is that of the offending token, counted from 1, on multi-line input too."""

from __future__ import annotations

import pickle

import pytest

from rules.lang import ConditionError, parse


def error(text: str) -> ConditionError:
    with pytest.raises(ConditionError) as info:
        parse(text)
    return info.value


def column_of(text: str, needle: str) -> int:
    return text.index(needle) + 1


def test_an_unclosed_parenthesis_expects_a_closing_one_at_the_end() -> None:
    text = "(:dml.get_object_owner() = 'HR'"
    err = error(text)
    assert (err.line, err.column) == (1, len(text) + 1)
    assert err.expected == "')'"
    assert str(err) == f"line 1, column {len(text) + 1}: expected ')' but found end of input"


def test_an_unexpected_keyword_is_named_as_written() -> None:
    text = ":dml.get_tag() = HEXTORAW('02' AND 1 = 1"
    err = error(text)
    assert (err.line, err.column) == (1, column_of(text, "AND"))
    assert err.expected == "',' or ')'"
    assert (
        str(err) == f"line 1, column {column_of(text, 'AND')}: expected ',' or ')' but found 'AND'"
    )


def test_positions_count_lines_and_columns_on_multi_line_input() -> None:
    text = "(:dml.get_object_owner() = 'HR'\n  and\n    :dml.get_object_name() = = 'X')"
    err = error(text)
    third = text.split("\n")[2]
    assert (err.line, err.column) == (3, third.index("= =") + 3)
    assert err.expected == "a value"


def test_strings_and_comments_spanning_lines_keep_positions_right() -> None:
    text = "'a\nb' = :msg.x /* a\ncomment */ AND\n  :msg.y ="
    err = error(text)
    assert (err.line, err.column) == (4, len("  :msg.y =") + 1)


def test_a_missing_operator_lists_what_a_predicate_accepts() -> None:
    err = error(":dml.get_object_owner() 'HR'")
    assert err.expected == "a comparison operator, IN, IS or LIKE"
    assert err.column == len(":dml.get_object_owner() ") + 1
    assert "found string 'HR'" in err.message


def test_trailing_text_after_a_complete_condition_is_refused() -> None:
    text = ":dml.is_null_tag() = 'Y' )"
    err = error(text)
    assert err.expected == "AND, OR or end of input"
    assert err.column == len(text)


@pytest.mark.parametrize("text", ["", "   ", " \n\t ", "-- only a comment", "/* nothing */"])
def test_an_empty_condition_is_refused(text) -> None:
    err = error(text)
    assert err.message == "a rule condition cannot be empty"
    assert err.expected == "a condition"


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("'abc = :x", "unterminated string", 1),
        (":x = 1 ; drop", "unexpected character ';'", 8),
        (':x = "unterminated', "unterminated quoted name", 6),
        (": x = 1", "expected a variable name after ':'", 2),
        ("/* open", "unterminated comment", 1),
    ],
)
def test_lexical_errors_point_at_the_character(text, message, column) -> None:
    err = error(text)
    assert err.message == message
    assert (err.line, err.column) == (1, column)


def test_a_name_without_a_colon_gets_a_hint() -> None:
    err = error("region = 'EUROPE'")
    assert err.expected == "a value"
    assert "variables start with a colon, as in :region" in str(err)


def test_arithmetic_is_refused_by_name() -> None:
    err = error(":msg.priority + 1 = 2")
    assert err.column == len(":msg.priority ") + 1
    assert "arithmetic is not supported" in err.message


def test_only_the_sys_dual_subquery_is_accepted() -> None:
    assert error("EXISTS (SELECT 1 FROM employees WHERE 1 = 1)").expected == "DUAL"
    assert error("EXISTS (SELECT x FROM SYS.DUAL WHERE 1 = 1)").expected == "1"
    assert error("EXISTS (SELECT 1 FROM SYS.DUAL)").expected == "WHERE"


def test_numbers_outside_oracle_range_are_refused() -> None:
    err = error(":msg.x = 1e200")
    assert "out of range" in err.message and err.column == len(":msg.x = ") + 1


def test_nesting_is_bounded_instead_of_overflowing_the_stack() -> None:
    deep = "(" * 500 + ":a = 1" + ")" * 500
    assert "nested more than" in error(deep).message
    assert "nested more than" in error("NOT " * 500 + ":a = 1").message
    assert "nested more than" in error("UPPER(" * 500 + "'a'" + ")" * 500 + " = 'A'").message


def test_the_error_survives_pickling_for_celery_and_spark() -> None:
    err = error(":a = ")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.message, copy.line, copy.column, copy.expected) == (
        err.message,
        err.line,
        err.column,
        err.expected,
    )
    assert str(copy) == str(err)
