"""Subset rule tests S1 to S16 of spec/rules.md §7.4: the INSERT, UPDATE and DELETE rules of
hr.regions region_id=2 (§3.5.1), evaluated on each LCR. At most one is TRUE, and it names the
operation the LCR carries after row migration (the migration itself is tested with the
generators)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rules.lang_helpers import value_of
from tests.rules.lang_seed import G12_SUBSET_INSERT, G13_SUBSET_UPDATE, G14_SUBSET_DELETE, row

RULES = {"INSERT": G12_SUBSET_INSERT, "UPDATE": G13_SUBSET_UPDATE, "DELETE": G14_SUBSET_DELETE}
T, N = True, None


def regions(command, *, old=None, new=None, **kw):
    return row(command, "HR", "REGIONS", old=old, new=new, **kw)


# (case, LCR, {rule: value the table gives}, operation after migration or None for discard).
# A rule missing from the dict must simply not be TRUE.
CASES = [
    ("S1", regions("INSERT", new={"REGION_ID": 2}), {"INSERT": T}, "INSERT"),
    ("S2", regions("INSERT", new={"REGION_ID": 3}), {}, None),
    ("S3", regions("INSERT", new={"REGION_ID": None}), {"INSERT": N}, None),
    ("S4", regions("UPDATE", old={"REGION_ID": 4}, new={"REGION_ID": 2}), {"INSERT": T}, "INSERT"),
    (
        "S5",
        regions("UPDATE", old={"REGION_ID": None}, new={"REGION_ID": 2}),
        {"INSERT": T, "UPDATE": N},
        "INSERT",
    ),
    ("S6", regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 2}), {"UPDATE": T}, "UPDATE"),
    (
        "S7",
        regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_NAME": "X"}),
        {"UPDATE": T},
        "UPDATE",
    ),
    ("S8", regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 1}), {"DELETE": T}, "DELETE"),
    (
        "S9",
        regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": None}),
        {"UPDATE": N, "DELETE": T},
        "DELETE",
    ),
    ("S10", regions("UPDATE", old={"REGION_ID": 1}, new={"REGION_ID": 1}), {}, None),
    ("S11", regions("UPDATE", old={"REGION_NAME": "X"}, new={"REGION_ID": 2}), {}, None),
    ("S12", regions("DELETE", old={"REGION_ID": 2}), {"DELETE": T}, "DELETE"),
    ("S13", regions("DELETE", old={"REGION_ID": 3}), {}, None),
    ("S14", regions("INSERT", new={"REGION_ID": 2}, tag=b"\x01"), {}, None),
    ("S15", regions("INSERT", new={"REGION_ID": 2}, src="DBS2.EXAMPLE.COM"), {}, None),
    ("S16", row("INSERT", "HR", "EMPLOYEES", new={"REGION_ID": 2}), {}, None),
]


@pytest.mark.parametrize(("case", "lcr", "values", "operation"), CASES, ids=[c[0] for c in CASES])
def test_subset_rules_give_the_table_values(case, lcr, values, operation) -> None:
    results = {op: value_of(text, lcr) for op, text in RULES.items()}
    for op, result in results.items():
        if op in values:
            assert result is values[op], (op, result)
        else:
            assert result is not True, op
    fired = [op for op, result in results.items() if result is True]
    assert fired == ([operation] if operation else [])


column_values = st.one_of(st.none(), st.sampled_from([1, 2, 3, "2", "x"]))
maybe_column = st.one_of(st.just({}), column_values.map(lambda x: {"REGION_ID": x}))


@settings(deadline=None)
@given(
    command=st.sampled_from(["INSERT", "UPDATE", "DELETE"]),
    old=maybe_column,
    new=maybe_column,
    tag=st.sampled_from([None, b"\x01"]),
)
def test_the_three_subset_rules_are_mutually_exclusive(command, old, new, tag) -> None:
    lcr = regions(command, old=old, new=new, tag=tag)
    fired = [op for op, text in RULES.items() if value_of(text, lcr) is True]
    assert len(fired) <= 1, fired
    if fired and fired[0] != "UPDATE":
        assert command in (fired[0], "UPDATE")
