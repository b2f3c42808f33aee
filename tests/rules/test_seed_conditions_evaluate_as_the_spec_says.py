"""Condition evaluations E1 to E38 of spec/rules.md §7.4: the seed's own condition strings against
the messages of its examples. ✔ is TRUE, ✘ FALSE, ∅ NULL (which never fires)."""

from __future__ import annotations

import pytest

from rules.lang import RuleSetSpec
from tests.rules.lang_helpers import value_of
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
    G15,
    ddl,
    region_msg,
    row,
)

T, F, N = True, False, None

CASES = [
    ("E1", G1, row(tag=None), T),
    ("E2", G1, row(tag=b"\x02"), F),
    ("E3", G2, ddl("CREATE TABLE", "TABLE", "HR", "T", base_owner="HR", base_name="T"), T),
    ("E4", G3, row(src="DBS9.EXAMPLE.COM", tag=b"\x11"), T),
    ("E5", G4, ddl("DROP TABLE", "TABLE", "HR", "T", tag=b"\x01"), T),
    ("E6", G2, row(), N),
    ("E7", G5, row("INSERT", "HR", "COUNTRIES"), T),
    ("E8", G5, row("INSERT", "HR", "CANDIDATES"), T),
    ("E9", G5, row("INSERT", "OE", "INVENTORIES"), F),
    ("E10", G5, row("INSERT", "HR", "COUNTRIES", src="DBS2.EXAMPLE.COM"), F),
    ("E11", G5, row("INSERT", "HR", "COUNTRIES", tag=b"\x01"), F),
    (
        "E12",
        G6,
        ddl("ALTER INDEX", "INDEX", "HR", "LOC_CITY_IX", base_owner="HR", base_name="LOCATIONS"),
        T,
    ),
    (
        "E13",
        G6,
        ddl("TRUNCATE TABLE", "TABLE", "HR", "EMPLOYEES", base_owner="HR", base_name="EMPLOYEES"),
        T,
    ),
    (
        "E14",
        G6,
        ddl(
            "ALTER TRIGGER",
            "TRIGGER",
            "HR",
            "UPDATE_JOB_HISTORY",
            base_owner="HR",
            base_name="EMPLOYEES",
        ),
        T,
    ),
    (
        "E15",
        G6,
        ddl("CREATE TABLE", "TABLE", "HR", "CANDIDATES", base_owner="HR", base_name="CANDIDATES"),
        T,
    ),
    ("E16", G6, ddl("ALTER TABLE", "TABLE", None, None, base_owner="HR", base_name="EMP"), T),
    ("E17", G6, ddl("CREATE TABLE", "TABLE", "OE", "T", base_owner="OE", base_name="T"), F),
    ("E18", G7, row("INSERT", "HR", "LOCATIONS", new={"LOCATION_ID": 1000}), T),
    *[
        (f"E19.{i}", G7, row("DELETE", "HR", "LOCATIONS", old={"LOCATION_ID": i}), T)
        for i in range(1, 6)
    ],
    ("E20", G7, row("INSERT", "HR", "EMPLOYEES"), F),
    ("E21", G7, row("UPDATE", "HR", "COUNTRIES"), F),
    (
        "E22",
        G8,
        ddl("ALTER TABLE", "TABLE", "HR", "COUNTRIES", base_owner="HR", base_name="COUNTRIES"),
        T,
    ),
    (
        "E23",
        G8,
        ddl("CREATE INDEX", "INDEX", "HR", "C_IX", base_owner="HR", base_name="COUNTRIES"),
        T,
    ),
    ("E24", G8, ddl("CREATE SYNONYM", "SYNONYM", "HR", "CS"), N),
    (
        "E25",
        G8,
        ddl("ALTER TABLE", "TABLE", "HR", "LOCATIONS", base_owner="HR", base_name="LOCATIONS"),
        F,
    ),
    ("E26", G15, region_msg("EUROPE", 1), T),
    ("E27", G15, region_msg("EUROPE", 2), F),
    ("E28", G15, region_msg(None, 1), N),
    ("E29", AMERICAS, region_msg("AMERICAS", 2), T),
    ("E30", AMERICAS, region_msg("AMERICAS", 1), F),
    ("E31", G9, row("INSERT", "HR", "JOB_HISTORY"), T),
    ("E32", G9, row("DELETE", "HR", "JOB_HISTORY", tag=b"\x05"), T),
    ("E33", G9, row("INSERT", "HR", "DEPARTMENTS"), F),
    ("E34", G9, row("INSERT", "HR", "JOB_HISTORY", src="DBS2.EXAMPLE.COM"), F),
    ("E35", G10, row("UPDATE", "HR", "DEPARTMENTS", tag=b"\x02"), T),
    ("E36", G10, row("UPDATE", "HR", "DEPARTMENTS", tag=None), N),
    ("E37", G10, row("UPDATE", "HR", "DEPARTMENTS", tag=b"\x01"), F),
    (
        "E38",
        G11,
        ddl(
            "ALTER TABLE",
            "TABLE",
            "HR",
            "DEPARTMENTS",
            base_owner="HR",
            base_name="DEPARTMENTS",
            tag=b"\x02",
        ),
        T,
    ),
]


@pytest.mark.parametrize(
    ("case", "condition", "message", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_seed_condition_has_the_expected_truth_value(case, condition, message, expected) -> None:
    assert value_of(condition, message) is expected


@pytest.mark.parametrize(
    ("case", "condition", "message", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_a_rule_set_of_that_one_rule_fires_only_on_true(case, condition, message, expected) -> None:
    # Through the indexed rule set: the index must never hide a TRUE rule nor fire a NULL one.
    rule_set = RuleSetSpec.from_conditions({case: condition})
    fired = [r.name for r in rule_set.true_rules(message)]
    assert fired == ([case] if expected is True else [])
