"""LIKE with % (any run of characters, newlines included) and _ (exactly one), case-sensitive,
with ESCAPE, and without catastrophic backtracking on patterns with many %."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.lang import UserMessage
from rules.lang.values import like
from tests.rules.lang_helpers import value_of


def m(s):
    return UserMessage("T", {"s": s})


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("HR", "HR", True),
        ("HR", "hr", False),
        ("HR_EMP", "HR%", True),
        ("XHR", "HR%", False),
        ("JOB_HISTORY", "%HISTORY", True),
        ("JOB_HISTORY", "%B_H%", True),
        ("ABC", "A_C", True),
        ("AC", "A_C", False),
        ("ABBC", "A_C", False),
        ("", "%", True),
        ("", "_", False),
        ("a\nb", "a%b", True),
        ("a\nb", "a_b", True),
        ("50%", "50\\%", True),
        ("500", "50\\%", False),
        ("a_b", "a\\_b", True),
        ("axb", "a\\_b", False),
        ("a\\b", "a\\\\b", True),
        ("regexp.*", "regexp.*", True),
        ("regexpXY", "regexp.*", False),
    ],
)
def test_like_patterns(text, pattern, expected) -> None:
    condition = f":msg.s LIKE '{pattern}' ESCAPE '\\'"
    assert value_of(condition, m(text)) is expected
    assert value_of(condition.replace(" LIKE ", " NOT LIKE "), m(text)) is (not expected)


def test_a_pattern_may_come_from_the_message() -> None:
    msg = UserMessage("T", {"s": "HR_EMP", "p": "HR%", "e": "!"})
    assert value_of(":msg.s LIKE :msg.p", msg) is True
    assert value_of("'HR%' LIKE :msg.p", msg) is True
    assert value_of(":msg.s LIKE 'HR!_%' ESCAPE :msg.e", msg) is True
    assert value_of(":msg.s LIKE 'HR!x' ESCAPE :msg.e", msg) is None  # misused escape


def test_many_percent_signs_do_not_backtrack_exponentially() -> None:
    text = "a" * 5000
    # A regular expression would take ages here; the matcher is O(text * pattern).
    assert like(text, "%a%a%a%a%a%a%a%a%a%a%a%a%b") is False
    assert like(text + "b", "%a%a%a%a%a%a%a%a%a%a%a%a%b") is True


def _reference(text: str, pattern: str) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, re.DOTALL) is not None


@settings(deadline=None)
@given(st.text(alphabet="ab%_", max_size=8), st.text(alphabet="ab", max_size=10))
def test_like_agrees_with_a_regular_expression(pattern, text) -> None:
    assert like(text, pattern) is _reference(text, pattern)
