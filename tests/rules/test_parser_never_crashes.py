"""Bad input never crashes: ``parse`` on any text or bytes returns a tree or raises ConditionError,
and whatever it returns validates (or raises ConditionError), compiles, classifies, prints and
evaluates to TRUE, FALSE or NULL for any message without raising."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.lang import (
    ConditionError,
    RuleSetSpec,
    bindings_for,
    classify,
    compile_python,
    decide,
    equality_keys,
    parse,
    to_text,
    validate,
)
from tests.rules.lang_strategies import conditions, messages

TOKENS = [
    "(",
    ")",
    ",",
    ".",
    ":dml",
    ":ddl",
    ":msg",
    ':"VAR$_52"',
    ":",
    '"',
    "'",
    "''",
    "get_value",
    "get_object_owner",
    "get_tag",
    "is_null_tag",
    "get_object_type",
    "()",
    "AccessNumber",
    "AccessVarchar2",
    "'OLD'",
    "'NEW'",
    "'\"X\"'",
    "'Y'",
    "=",
    "!=",
    "<>",
    "^=",
    "<",
    "<=",
    ">",
    ">=",
    "IN",
    "NOT",
    "IS",
    "NULL",
    "LIKE",
    "ESCAPE",
    "EXISTS",
    "SELECT",
    "1",
    "FROM",
    "SYS",
    "DUAL",
    "WHERE",
    "AND",
    "OR",
    "HEXTORAW",
    "UPPER",
    "LOWER",
    "'%a_'",
    "'!'",
    "2.5",
    "-",
    "+",
    "*",
    "1e5",
    "1e999",
    ".5",
    "region",
    "--",
    "/*",
    "*/",
    "\n",
    "'02'",
    "x",
]
soups = st.lists(st.sampled_from(TOKENS), max_size=30).flatmap(
    lambda toks: st.sampled_from([" ".join(toks), "".join(toks)])
)


def outcome(text: str):
    try:
        return parse(text)
    except ConditionError as err:
        assert err.line >= 1 and err.column >= 1
        assert str(err).startswith(f"line {err.line}, column {err.column}: ")
        return None


def exercise(cond, message) -> None:
    with contextlib.suppress(ConditionError):
        validate(cond)
    assert classify(cond) in ("simple", "complex")
    equality_keys(cond)
    assert parse(to_text(cond)) == cond
    assert compile_python(cond)(bindings_for(message)) in (True, False, None)


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_random_text_parses_or_raises_condition_error(text) -> None:
    outcome(text)


@settings(max_examples=500, deadline=None)
@given(st.binary())
def test_random_bytes_parse_or_raise_condition_error(data) -> None:
    outcome(data.decode("utf-8", errors="replace"))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soups, messages)
def test_token_soup_parses_or_raises_and_what_parses_evaluates(text, message) -> None:
    cond = outcome(text)
    if cond is not None:
        exercise(cond, message)


@settings(max_examples=300, deadline=None)
@given(conditions, messages)
def test_every_generated_condition_evaluates_to_three_values(cond, message) -> None:
    exercise(cond, message)
    rule_set = RuleSetSpec.from_conditions([to_text(cond)])
    assert decide(message, positive=rule_set, negative=None).action in ("PERFORM", "DISCARD")
