"""Row migration for subset rules (spec/rules.md §3.5.4) and the subset cases S1-S16 of §7.4."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from rules.lang.generators import ROW_SUBSET_ACTION
from rules.lang.migration import MigrationError, row_migration, subsetting_operation_of


def _row(command: str, old: dict[str, Any] | None = None, new: dict[str, Any] | None = None):
    return {
        "kind": "row_lcr",
        "source_database_name": "DBS1.EXAMPLE.COM",
        "command_type": command,
        "object_owner": "HR",
        "object_name": "REGIONS",
        "tag": None,
        "old_values": old or {},
        "new_values": new or {},
    }


def _ctx(operation: str) -> dict[str, str]:
    return {ROW_SUBSET_ACTION: operation}


# --- the migration itself, per fired rule --------------------------------------------------------


def test_s4_an_update_that_enters_the_subset_becomes_an_insert_of_the_whole_new_row():
    lcr = _row("UPDATE", old={"REGION_ID": 4, "REGION_NAME": "Asia"}, new={"REGION_ID": 2})
    out = row_migration(lcr, action_context=_ctx("INSERT"))
    assert out["command_type"] == "INSERT"
    assert out["new_values"] == {"REGION_ID": 2, "REGION_NAME": "Asia"}
    assert out["old_values"] == {}
    assert (out["object_owner"], out["object_name"], out["tag"]) == ("HR", "REGIONS", None)
    assert lcr["command_type"] == "UPDATE"  # the input is left alone


def test_s5_an_update_from_null_becomes_an_insert():
    out = row_migration(
        _row("UPDATE", old={"REGION_ID": None}, new={"REGION_ID": 2}),
        action_context=_ctx("INSERT"),
    )
    assert (out["command_type"], out["new_values"]) == ("INSERT", {"REGION_ID": 2})


def test_s8_an_update_that_leaves_the_subset_becomes_a_delete_of_the_old_row():
    lcr = _row("UPDATE", old={"REGION_ID": 2, "REGION_NAME": "Americas"}, new={"REGION_ID": 1})
    out = row_migration(lcr, action_context=_ctx("DELETE"))
    assert out["command_type"] == "DELETE"
    assert out["old_values"] == {"REGION_ID": 2, "REGION_NAME": "Americas"}
    assert out["new_values"] == {}


def test_s9_an_update_to_null_becomes_a_delete():
    out = row_migration(
        _row("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": None}),
        action_context=_ctx("DELETE"),
    )
    assert (out["command_type"], out["old_values"]) == ("DELETE", {"REGION_ID": 2})


@pytest.mark.parametrize(
    ("case", "operation", "lcr"),
    [
        ("S1", "INSERT", _row("INSERT", new={"REGION_ID": 2})),
        ("S6", "UPDATE", _row("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 2})),
        ("S7", "UPDATE", _row("UPDATE", old={"REGION_ID": 2}, new={"REGION_NAME": "X"})),
        ("S12", "DELETE", _row("DELETE", old={"REGION_ID": 2})),
    ],
)
def test_lcrs_that_keep_their_operation_pass_unchanged(case, operation, lcr):
    assert row_migration(lcr, action_context=_ctx(operation)) is lcr


def test_rules_without_a_row_subset_action_do_not_migrate():
    lcr = _row("UPDATE", old={"REGION_ID": 4}, new={"REGION_ID": 2})
    assert row_migration(lcr, action_context={}) is lcr
    assert row_migration(lcr) is lcr


def test_the_subsetting_operation_can_stand_in_for_the_action_context():
    lcr = _row("UPDATE", old={"REGION_ID": 4}, new={"REGION_ID": 2})
    assert row_migration(lcr, subsetting_operation="insert")["command_type"] == "INSERT"


@pytest.mark.parametrize(
    ("operation", "command"),
    [("INSERT", "DELETE"), ("DELETE", "INSERT"), ("UPDATE", "INSERT"), ("UPDATE", "DELETE")],
)
def test_a_rule_that_cannot_have_fired_for_the_lcr_is_an_error(operation, command):
    with pytest.raises(MigrationError):
        row_migration(_row(command, old={"REGION_ID": 2}), action_context=_ctx(operation))


def test_an_unknown_operation_is_an_error():
    with pytest.raises(MigrationError):
        subsetting_operation_of({ROW_SUBSET_ACTION: "MERGE"})


@dataclass(frozen=True)
class _FrozenRow:
    command_type: str
    old_values: dict[str, Any] = field(default_factory=dict)
    new_values: dict[str, Any] = field(default_factory=dict)
    object_name: str = "REGIONS"


def test_row_objects_are_copied_not_changed():
    lcr = _FrozenRow("UPDATE", {"REGION_ID": 4, "REGION_NAME": "Asia"}, {"REGION_ID": 2})
    out = row_migration(lcr, action_context=_ctx("INSERT"))
    assert out == _FrozenRow("INSERT", {}, {"REGION_ID": 2, "REGION_NAME": "Asia"})
    assert lcr.command_type == "UPDATE"


# --- S1-S16: the three generated rules evaluated, then row migration -----------------------------

S_CASES = [
    # case, LCR fields, (INSERT, UPDATE, DELETE) rule results, resulting operation or None = discard
    (
        "S1",
        {"command_type": "INSERT", "new_values": {"REGION_ID": 2}},
        (True, False, False),
        "INSERT",
    ),
    ("S2", {"command_type": "INSERT", "new_values": {"REGION_ID": 3}}, (False, False, False), None),
    (
        "S3",
        {"command_type": "INSERT", "new_values": {"REGION_ID": None}},
        (None, False, False),
        None,
    ),
    (
        "S4",
        {"command_type": "UPDATE", "old_values": {"REGION_ID": 4}, "new_values": {"REGION_ID": 2}},
        (True, False, False),
        "INSERT",
    ),
    (
        "S5",
        {
            "command_type": "UPDATE",
            "old_values": {"REGION_ID": None},
            "new_values": {"REGION_ID": 2},
        },
        (True, None, False),
        "INSERT",
    ),
    (
        "S6",
        {"command_type": "UPDATE", "old_values": {"REGION_ID": 2}, "new_values": {"REGION_ID": 2}},
        (False, True, False),
        "UPDATE",
    ),
    (
        "S7",
        {
            "command_type": "UPDATE",
            "old_values": {"REGION_ID": 2},
            "new_values": {"REGION_NAME": "X"},
        },
        (False, True, False),
        "UPDATE",
    ),
    (
        "S8",
        {"command_type": "UPDATE", "old_values": {"REGION_ID": 2}, "new_values": {"REGION_ID": 1}},
        (False, False, True),
        "DELETE",
    ),
    (
        "S9",
        {
            "command_type": "UPDATE",
            "old_values": {"REGION_ID": 2},
            "new_values": {"REGION_ID": None},
        },
        (False, None, True),
        "DELETE",
    ),
    (
        "S10",
        {"command_type": "UPDATE", "old_values": {"REGION_ID": 1}, "new_values": {"REGION_ID": 1}},
        (False, False, False),
        None,
    ),
    (
        "S11",
        {"command_type": "UPDATE", "new_values": {"REGION_ID": 2}},
        (False, False, False),
        None,
    ),
    (
        "S12",
        {"command_type": "DELETE", "old_values": {"REGION_ID": 2}},
        (False, False, True),
        "DELETE",
    ),
    (
        "S13",
        {"command_type": "DELETE", "old_values": {"REGION_ID": 3}},
        (False, False, False),
        None,
    ),
    (
        "S14",
        {"command_type": "INSERT", "new_values": {"REGION_ID": 2}, "tag": "01"},
        (False, False, False),
        None,
    ),
    (
        "S15",
        {
            "command_type": "INSERT",
            "new_values": {"REGION_ID": 2},
            "source_database_name": "DBS2.EXAMPLE.COM",
        },
        (False, False, False),
        None,
    ),
    (
        "S16",
        {"command_type": "INSERT", "new_values": {"REGION_ID": 2}, "object_name": "EMPLOYEES"},
        (False, False, False),
        None,
    ),
]


@pytest.fixture(scope="module")
def compiled_subset_rules():
    from rules.lang import compile_python, parse
    from rules.lang.generators import subset_rules

    rules = subset_rules(
        table_name="hr.regions", dml_condition="region_id=2", source_database="dbs1.example.com"
    )
    return [(rule, compile_python(parse(rule.condition))) for rule in rules]


@pytest.mark.parametrize(
    ("case", "fields", "results", "operation"), S_CASES, ids=[c[0] for c in S_CASES]
)
def test_subset_cases_fire_at_most_one_rule_and_migrate_the_row(
    compiled_subset_rules, case, fields, results, operation
):
    from rules.lang import bindings_for, message_from_json

    lcr = message_from_json({**_row("INSERT"), **fields})
    bindings = bindings_for(lcr)
    got = tuple(fn(bindings) for _, fn in compiled_subset_rules)
    # A blank cell in §7.4 is "not TRUE"; where the spec says NULL (∅) the result is exactly NULL.
    assert tuple(r is True for r in got) == tuple(r is True for r in results)
    for expected, actual in zip(results, got, strict=True):
        if expected is None:
            assert actual is None
    fired = [rule for (rule, _), r in zip(compiled_subset_rules, got, strict=True) if r is True]
    if operation is None:
        assert fired == []
        return
    (rule,) = fired  # the three rules are mutually exclusive
    out = row_migration(lcr, action_context=rule.action_context)
    assert out.command_type == operation
    if operation == "INSERT":
        assert out.old_values == {}
        assert out.new_values == {**lcr.old_values, **lcr.new_values}
    if operation == "DELETE":
        assert (out.old_values, out.new_values) == (lcr.old_values, {})
    if operation == "UPDATE":
        assert out is lcr
