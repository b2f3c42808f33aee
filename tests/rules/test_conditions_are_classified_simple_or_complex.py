"""Simple and complex conditions (spec/rules.md §5.2, §7.2): the system-created global, schema,
table and message rules are simple; subset rules and anything with NOT, EXISTS, IN, LIKE or a
member function with arguments are complex, and the reason names the position."""

from __future__ import annotations

import pytest

from rules.lang import classify, parse, why_complex
from tests.rules.lang_seed import (
    AMERICAS,
    G1,
    G2,
    G3,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12_SUBSET_INSERT,
    G13_SUBSET_UPDATE,
    G14_SUBSET_DELETE,
    G15,
)


@pytest.mark.parametrize("text", [G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G15, AMERICAS])
def test_system_created_rules_are_simple(text) -> None:
    assert classify(parse(text)) == "simple"
    assert why_complex(parse(text)) is None


@pytest.mark.parametrize("text", [G12_SUBSET_INSERT, G13_SUBSET_UPDATE, G14_SUBSET_DELETE])
def test_subset_rules_are_complex(text) -> None:
    assert classify(parse(text)) == "complex"


@pytest.mark.parametrize(
    ("text", "needle", "reason"),
    [
        ("(:dml.get_object_owner() = 'HR') AND NOT :dml.get_object_name() = 'X'", "NOT", "NOT"),
        ("1 = 1 AND EXISTS (SELECT 1 FROM SYS.DUAL WHERE 1 = 1)", "EXISTS", "EXISTS"),
        (":dml.get_command_type() IN ('INSERT', 'UPDATE')", "IN", "IN"),
        (":dml.get_object_name() LIKE 'JOB%'", "LIKE", "LIKE"),
        (":dml.get_value('NEW','X') IS NULL", "get_value", "takes arguments"),
        (":dml.get_value('NEW','X').AccessNumber() = 2", "get_value", "takes arguments"),
        ("UPPER(:msg.region) = 'EU'", "UPPER", "function UPPER"),
        (":msg.a = :msg.b", "=", "two expressions"),
    ],
)
def test_complex_constructs_are_named_with_their_position(text, needle, reason) -> None:
    cond = parse(text)
    assert classify(cond) == "complex"
    why = why_complex(cond)
    assert why.startswith(f"line 1, column {text.index(needle) + 1}: ")
    assert reason in why


@pytest.mark.parametrize(
    "text",
    [
        ":msg.a.b != 3",
        "'HR' = :dml.get_object_owner()",
        ":dml.get_tag() = HEXTORAW('02') OR :dml.get_tag() IS NULL",
        "1 = 1",
        ":dml.get_object_owner() >= 'A' AND :dml.get_object_owner() < UPPER('b')",
    ],
)
def test_comparisons_of_members_with_constants_stay_simple(text) -> None:
    assert classify(parse(text)) == "simple"
