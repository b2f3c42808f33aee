"""LIKE with a pattern read from the message and a constant ESCAPE character outside the Basic
Multilingual Plane (one character to Oracle and Python, two UTF-16 units to Spark, whose own LIKE
refuses it) gives the same TRUE / FALSE / NULL on Spark as in Python. Found by the compilers'
agreement test."""

from __future__ import annotations

import pytest

from rules.lang import UserMessage, parse
from tests.rules.strategies import python_values, spark_values

pytestmark = pytest.mark.spark

ESC = "\U0001f60d"


def test_spark_agrees_with_python(spark) -> None:
    conds = [
        parse(f":msg.c LIKE :msg.p ESCAPE '{ESC}'"),
        parse(f":msg.c NOT LIKE :msg.p ESCAPE '{ESC}'"),
    ]
    messages = [
        UserMessage("T", {"c": "a%b", "p": f"a{ESC}%b"}),  # an escaped %: TRUE
        UserMessage("T", {"c": "axb", "p": f"a{ESC}%b"}),  # FALSE
        UserMessage("T", {"c": "ab", "p": f"a{ESC}b"}),  # a misused escape: NULL
        UserMessage("T", {"c": "ab", "p": "a%"}),  # no escape in the pattern: TRUE
    ]
    python = python_values(conds, messages)

    assert python[0] == [True, False, None, True]
    assert spark_values(spark, conds, messages) == python
