"""Declarative rule-based transformations on row LCRs (spec/rules.md §4.2, §7.3), one behaviour per
test: each type, value_type scoping, the execution order, immutability, and the checks made when a
transformation is declared."""

from __future__ import annotations

from typing import Any

import pytest

from rules.choices import DeclarativeType
from rules.lang.transform import (
    DEFAULT_ORDER,
    Declarative,
    TransformationError,
    apply_declarative,
    declarative,
    ordered,
    transform_row,
)
from rules.lang.values import DdlLCR, RowLCR, UserMessage


def _update(**kw: Any) -> RowLCR:
    return RowLCR(
        "DBS1.EXAMPLE.COM",
        kw.pop("command", "UPDATE"),
        kw.pop("owner", "HR"),
        kw.pop("name", "EMPLOYEES"),
        old_values=kw.pop("old", {"EMPLOYEE_ID": 100, "SALARY": 5000, "EMAIL": "SKING"}),
        new_values=kw.pop("new", {"SALARY": 6000, "EMAIL": "STEVEN.KING"}),
    )


def _insert(new: dict[str, Any] | None = None) -> RowLCR:
    return _update(command="INSERT", old={}, new=new or {"EMPLOYEE_ID": 7, "SALARY": 1})


def _delete(old: dict[str, Any] | None = None) -> RowLCR:
    return _update(command="DELETE", old=old or {"EMPLOYEE_ID": 7, "SALARY": 1}, new={})


# --- each type ----------------------------------------------------------------------------------


def test_keep_columns_keeps_only_the_listed_columns_in_old_and_new_values():
    out = transform_row(
        _update(), [declarative("KEEP COLUMNS", column_list=["employee_id", "salary"])]
    )
    assert out.old_values == {"EMPLOYEE_ID": 100, "SALARY": 5000}
    assert out.new_values == {"SALARY": 6000}


def test_keep_columns_takes_oracles_comma_separated_list_too():
    t = declarative("KEEP_COLUMNS", column_list="salary, email")
    assert t.declarative_type == "KEEP COLUMNS"
    assert t.column_list == ("SALARY", "EMAIL")


def test_delete_column_removes_the_column_from_both_lists():
    out = transform_row(_update(), [declarative("DELETE COLUMN", column_name="email")])
    assert "EMAIL" not in out.old_values
    assert "EMAIL" not in out.new_values
    assert out.new_values == {"SALARY": 6000}


def test_deleting_a_column_the_lcr_lacks_changes_nothing():
    lcr = _update()
    assert transform_row(lcr, [declarative("DELETE COLUMN", column_name="BONUS")]) is lcr


def test_rename_column_keeps_the_value_and_the_column_position():
    out = transform_row(
        _update(),
        [declarative("RENAME COLUMN", from_column_name="salary", to_column_name="pay")],
    )
    assert list(out.old_values) == ["EMPLOYEE_ID", "PAY", "EMAIL"]
    assert out.old_values["PAY"] == 5000
    assert out.new_values == {"PAY": 6000, "EMAIL": "STEVEN.KING"}


def test_rename_column_never_overwrites_a_column_that_already_has_the_target_name():
    lcr = _update(new={"SALARY": 6000, "PAY": 1})
    out = transform_row(
        lcr, [declarative("RENAME COLUMN", from_column_name="SALARY", to_column_name="PAY")]
    )
    assert out.new_values == {"SALARY": 6000, "PAY": 1}
    assert "PAY" in out.old_values  # the old values had no PAY, so they were renamed


def test_add_column_adds_to_the_new_values_by_default():
    t = declarative("ADD COLUMN", column_name="region", column_value="EMEA")
    assert t.value_type == "NEW"
    out = transform_row(_update(), [t])
    assert out.new_values["REGION"] == "EMEA"
    assert "REGION" not in out.old_values


def test_add_column_with_a_null_value_adds_a_null_column():
    out = transform_row(_insert(), [declarative("ADD COLUMN", column_name="NOTE")])
    assert "NOTE" in out.new_values
    assert out.new_values["NOTE"] is None


def test_add_column_values_follow_the_engines_value_domain():
    out = transform_row(
        _insert(), [declarative("ADD COLUMN", column_name="RATE", column_value=1.5)]
    )
    assert str(out.new_values["RATE"]) == "1.5"  # a JSON float becomes an exact NUMBER


def test_add_column_never_invents_a_value_list_the_command_does_not_carry():
    new_only = declarative("ADD COLUMN", column_name="X", column_value=1, value_type="NEW")
    old_only = declarative("ADD COLUMN", column_name="X", column_value=1, value_type="OLD")
    both = declarative("ADD COLUMN", column_name="X", column_value=1, value_type="*")

    assert transform_row(_delete(), [new_only]).new_values == {}
    assert transform_row(_insert(), [old_only]).old_values == {}
    deleted = transform_row(_delete(), [both])
    assert (deleted.old_values["X"], deleted.new_values) == (1, {})
    inserted = transform_row(_insert(), [both])
    assert (inserted.old_values, inserted.new_values["X"]) == ({}, 1)
    updated = transform_row(_update(), [both])
    assert updated.old_values["X"] == updated.new_values["X"] == 1


def test_add_column_leaves_a_column_the_lcr_already_carries():
    out = transform_row(
        _update(), [declarative("ADD COLUMN", column_name="SALARY", column_value=0)]
    )
    assert out.new_values["SALARY"] == 6000


def test_rename_table_renames_the_matching_table_only():
    t = declarative("RENAME TABLE", from_table_name="hr.employees", to_table_name="hr.staff")
    out = transform_row(_update(), [t])
    assert (out.object_owner, out.object_name) == ("HR", "STAFF")
    other = _update(name="JOBS")
    assert transform_row(other, [t]) is other


def test_rename_table_can_move_the_table_to_another_schema():
    t = declarative("RENAME TABLE", from_table_name="HR.EMPLOYEES", to_table_name="ARCH.EMP")
    out = transform_row(_update(), [t])
    assert (out.object_owner, out.object_name) == ("ARCH", "EMP")


def test_rename_schema_renames_the_owner_of_every_table_in_it():
    t = declarative("RENAME SCHEMA", from_schema_name="hr", to_schema_name="hr_copy")
    assert transform_row(_update(), [t]).object_owner == "HR_COPY"
    assert transform_row(_update(name="JOBS"), [t]).object_owner == "HR_COPY"
    oe = _update(owner="OE")
    assert transform_row(oe, [t]) is oe


def test_quoted_names_are_kept_exactly():
    t = declarative("RENAME COLUMN", from_column_name='"Salary"', to_column_name="pay")
    out = transform_row(_update(new={"Salary": 1}), [t])
    assert out.new_values == {"PAY": 1}


# --- value_type scoping ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value_type", "old_has", "new_has"),
    [("OLD", False, True), ("NEW", True, False), ("*", False, False)],
)
def test_value_type_scopes_column_transformations(value_type, old_has, new_has):
    out = transform_row(
        _update(), [declarative("DELETE COLUMN", column_name="EMAIL", value_type=value_type)]
    )
    assert ("EMAIL" in out.old_values, "EMAIL" in out.new_values) == (old_has, new_has)


def test_keep_columns_on_the_new_values_leaves_the_old_values_whole():
    lcr = _update()
    out = transform_row(
        lcr, [declarative("KEEP COLUMNS", column_list=["SALARY"], value_type="new")]
    )
    assert out.old_values == lcr.old_values
    assert out.new_values == {"SALARY": 6000}


def test_rename_column_on_the_old_values_only():
    out = transform_row(
        _update(),
        [
            declarative(
                "RENAME COLUMN", from_column_name="SALARY", to_column_name="PAY", value_type="OLD"
            )
        ],
    )
    assert "PAY" in out.old_values
    assert "SALARY" in out.new_values


# --- order ---------------------------------------------------------------------------------------


def test_the_default_order_matches_the_declarative_type_choices():
    assert tuple(DeclarativeType.values) == DEFAULT_ORDER


def _all_six(step: dict[str, int] | None = None) -> list[Declarative]:
    step = step or {}
    made = [
        declarative("RENAME SCHEMA", from_schema_name="HR", to_schema_name="HR2"),
        declarative("RENAME TABLE", from_table_name="HR.EMPLOYEES", to_table_name="HR.STAFF"),
        declarative("ADD COLUMN", column_name="SRC", column_value="dbs1"),
        declarative("RENAME COLUMN", from_column_name="SALARY", to_column_name="PAY"),
        declarative("DELETE COLUMN", column_name="EMAIL"),
        declarative("KEEP COLUMNS", column_list=["EMPLOYEE_ID", "SALARY", "EMAIL"]),
    ]
    return [
        Declarative(**{**_fields(t), "step_number": step.get(t.declarative_type, 0)}) for t in made
    ]


def _fields(t: Declarative) -> dict[str, Any]:
    return {name: getattr(t, name) for name in Declarative.__slots__}


def test_with_every_step_zero_the_order_is_oracles_default():
    assert [t.declarative_type for t in ordered(_all_six())] == list(DEFAULT_ORDER)


def test_step_numbers_override_the_default_order():
    steps = {"RENAME SCHEMA": 1, "ADD COLUMN": 2, "KEEP COLUMNS": 3}
    got = [t.declarative_type for t in ordered(_all_six(steps))]
    # Step 0 first (in default order), then 1, 2, 3.
    assert got == [
        "DELETE COLUMN",
        "RENAME COLUMN",
        "RENAME TABLE",
        "RENAME SCHEMA",
        "ADD COLUMN",
        "KEEP COLUMNS",
    ]


def test_equal_step_numbers_fall_back_to_the_default_order():
    steps = dict.fromkeys(DEFAULT_ORDER, 5)
    assert [t.declarative_type for t in ordered(_all_six(steps))] == list(DEFAULT_ORDER)


def test_default_order_result_keep_then_delete_then_rename_then_add():
    out = transform_row(_update(), _all_six())
    # keep drops nothing listed; delete EMAIL; rename SALARY→PAY; add SRC; then table and schema.
    assert out.old_values == {"EMPLOYEE_ID": 100, "PAY": 5000}
    assert out.new_values == {"PAY": 6000, "SRC": "dbs1"}
    assert (out.object_owner, out.object_name) == ("HR2", "STAFF")


def test_each_step_sees_the_result_of_the_previous_one():
    # Keep after add drops the added column, and keep after rename no longer finds SALARY.
    out = transform_row(_update(), _all_six({"KEEP COLUMNS": 9}))
    assert out.new_values == {}
    assert out.old_values == {"EMPLOYEE_ID": 100}
    # Rename schema before rename table: the table rename then no longer matches HR.EMPLOYEES.
    out = transform_row(
        _update(), _all_six({"RENAME SCHEMA": 0, "RENAME TABLE": 1, "KEEP COLUMNS": 0})
    )
    assert (out.object_owner, out.object_name) == ("HR2", "EMPLOYEES")


def test_column_steps_scoped_to_a_table_apply_to_that_table_as_the_rule_saw_it():
    rename_first = Declarative(
        "RENAME TABLE", step_number=1, from_table_name="HR.EMPLOYEES", to_table_name="HR.STAFF"
    )
    delete_after = Declarative(
        "DELETE COLUMN", step_number=2, column_name="EMAIL", table="HR.EMPLOYEES"
    )
    out = transform_row(_update(), [rename_first, delete_after])
    assert out.object_name == "STAFF"
    assert "EMAIL" not in out.new_values
    jobs = _update(name="JOBS")
    assert transform_row(jobs, [delete_after]) is jobs


# --- immutability and message kinds ---------------------------------------------------------------


def test_transformations_never_change_the_lcr_they_are_given():
    lcr = _update()
    before = (dict(lcr.old_values), dict(lcr.new_values), lcr.object_owner, lcr.object_name)
    out = transform_row(lcr, _all_six())
    assert out is not lcr
    assert (dict(lcr.old_values), dict(lcr.new_values), lcr.object_owner, lcr.object_name) == before


def test_mapping_shaped_lcrs_are_copied_not_changed():
    lcr = {
        "kind": "row_lcr",
        "command_type": "INSERT",
        "object_owner": "HR",
        "object_name": "EMPLOYEES",
        "old_values": {},
        "new_values": {"A": 1},
    }
    out = transform_row(
        lcr, [declarative("RENAME COLUMN", from_column_name="A", to_column_name="B")]
    )
    assert out["new_values"] == {"B": 1}
    assert lcr["new_values"] == {"A": 1}


@pytest.mark.parametrize(
    "message",
    [
        DdlLCR("DBS1.EXAMPLE.COM", "CREATE TABLE", "TABLE", "HR", "EMPLOYEES"),
        UserMessage("ORDER", {"ID": 1}),
    ],
)
def test_declarative_transformations_leave_other_messages_alone(message):
    for t in _all_six():
        assert apply_declarative(message, t) is message


# --- declaring -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "params", "field"),
    [
        ("SHUFFLE COLUMNS", {}, "declarative_type"),
        (None, {}, "declarative_type"),
        ("KEEP COLUMNS", {}, "column_list"),
        ("KEEP COLUMNS", {"column_list": []}, "column_list"),
        ("KEEP COLUMNS", {"column_list": ["A", ""]}, "column_list"),
        ("DELETE COLUMN", {}, "column_name"),
        ("DELETE COLUMN", {"column_name": "A.B"}, "column_name"),
        ("DELETE COLUMN", {"column_name": 'bad"quote'}, "column_name"),
        ("RENAME COLUMN", {"to_column_name": "B"}, "from_column_name"),
        ("RENAME COLUMN", {"from_column_name": "A"}, "to_column_name"),
        ("RENAME COLUMN", {"from_column_name": "a", "to_column_name": "A"}, "to_column_name"),
        ("ADD COLUMN", {"column_value": 1}, "column_name"),
        ("ADD COLUMN", {"column_name": "A", "column_value": {"x": 1}}, "column_value"),
        ("ADD COLUMN", {"column_name": "A", "column_value": [1]}, "column_value"),
        ("RENAME TABLE", {"to_table_name": "HR.B"}, "from_table_name"),
        (
            "RENAME TABLE",
            {"from_table_name": "EMPLOYEES", "to_table_name": "HR.B"},
            "from_table_name",
        ),
        ("RENAME TABLE", {"from_table_name": "HR.A", "to_table_name": "a.b.c"}, "to_table_name"),
        ("RENAME TABLE", {"from_table_name": "HR.A", "to_table_name": "hr.a"}, "to_table_name"),
        ("RENAME SCHEMA", {"from_schema_name": "HR"}, "to_schema_name"),
        ("RENAME SCHEMA", {"to_schema_name": "HR"}, "from_schema_name"),
        ("DELETE COLUMN", {"column_name": "A", "value_type": "BOTH"}, "value_type"),
        ("DELETE COLUMN", {"column_name": "A", "step_number": -1}, "step_number"),
        ("DELETE COLUMN", {"column_name": "A", "step_number": "2"}, "step_number"),
        ("DELETE COLUMN", {"column_name": "A", "column_list": ["B"]}, "column_list"),
        (
            "RENAME SCHEMA",
            {"from_schema_name": "A", "to_schema_name": "B", "value_type": "OLD"},
            "value_type",
        ),
        (
            "RENAME TABLE",
            {"from_table_name": "A.B", "to_table_name": "A.C", "column_name": "X"},
            "column_name",
        ),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_parameter(kind, params, field):
    with pytest.raises(TransformationError) as exc:
        declarative(kind, **params)
    assert exc.value.field == field


def test_names_are_stored_canonical():
    t = declarative("RENAME TABLE", from_table_name=' hr . "Jobs" ', to_table_name="hr.assignments")
    assert (t.from_table_name, t.to_table_name) == ("HR.Jobs", "HR.ASSIGNMENTS")
    assert declarative("rename schema", from_schema_name="hr", to_schema_name="x").value_type == "*"
