"""Rule-set decisions D1 to D16 of spec/rules.md §7.4 (Table 5-1 and §2.3): the negative set N = {G9}
and the positive set P = {the hr schema rule}."""

from __future__ import annotations

import pytest

from rules.lang import DISCARD, PERFORM, CompiledRule, RuleSetSpec, decide, explain, parse
from tests.rules.lang_seed import G9, G15, SCHEMA_HR_DML, ddl, region_msg, row


def negative() -> RuleSetSpec:
    return RuleSetSpec.from_conditions({"N_JOB_HISTORY": G9}, name="N")


def positive() -> RuleSetSpec:
    return RuleSetSpec.from_conditions({"P_HR": SCHEMA_HR_DML}, name="P")


EMPTY = RuleSetSpec([], name="empty")
ANYTHING = [
    row("INSERT", "HR", "DEPARTMENTS"),
    row("INSERT", "OE", "X", tag=b"\x01"),
    ddl("CREATE TABLE", "TABLE", "HR", "T"),
    region_msg("EUROPE", 1),
]

CASES = [
    ("D1", None, None, ANYTHING, PERFORM),
    ("D2", None, positive(), [row("INSERT", "HR", "DEPARTMENTS")], PERFORM),
    ("D3", None, positive(), [row("INSERT", "OE", "X")], DISCARD),
    ("D4", negative(), None, [row("INSERT", "HR", "JOB_HISTORY")], DISCARD),
    ("D5", negative(), None, [row("INSERT", "HR", "DEPARTMENTS")], PERFORM),
    ("D6", negative(), positive(), [row("INSERT", "HR", "JOB_HISTORY")], DISCARD),
    (
        "D7",
        negative(),
        positive(),
        [
            row("INSERT", "HR", "DEPARTMENTS"),
            row("UPDATE", "HR", "EMPLOYEES"),
            row("DELETE", "HR", "COUNTRIES"),
        ],
        PERFORM,
    ),
    ("D8", EMPTY, None, ANYTHING, PERFORM),
    ("D9", EMPTY, positive(), [row("INSERT", "HR", "DEPARTMENTS")], PERFORM),
    ("D10", None, EMPTY, ANYTHING, DISCARD),
    ("D11", EMPTY, EMPTY, ANYTHING, DISCARD),
    ("D12", negative(), EMPTY, ANYTHING, DISCARD),
    ("D13", negative(), positive(), [row("INSERT", "HR", "JOB_HISTORY", tag=b"\x01")], DISCARD),
    ("D14", negative(), positive(), [row("INSERT", "HR", "DEPARTMENTS", tag=b"\x01")], DISCARD),
    (
        "D15",
        negative(),
        positive(),
        [row("INSERT", "HR", "JOB_HISTORY", src="DBS2.EXAMPLE.COM")],
        DISCARD,
    ),
]


@pytest.mark.parametrize(
    ("case", "neg", "pos", "messages", "action"), CASES, ids=[c[0] for c in CASES]
)
def test_decision_matches_table_5_1(case, neg, pos, messages, action) -> None:
    for message in messages:
        assert decide(message, positive=pos, negative=neg).action == action, message


def test_d6_a_negative_hit_never_evaluates_the_positive_set() -> None:
    calls = []
    cond = parse(SCHEMA_HR_DML)

    def spy(b):
        calls.append(b)
        return True

    spying = RuleSetSpec([CompiledRule("P_SPY", SCHEMA_HR_DML, cond, spy, "row_lcr")])
    decision = decide(row("INSERT", "HR", "JOB_HISTORY"), positive=spying, negative=negative())
    assert decision.action == DISCARD
    assert decision.rule is not None and decision.rule.name == "N_JOB_HISTORY"
    assert calls == []


@pytest.mark.parametrize("order", [("R1", "R2"), ("R2", "R1")])
def test_d16_conflicting_positive_rules_perform(order) -> None:
    texts = {
        "R1": "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'EMPLOYEES')) )",
        "R2": "NOT (:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'EMPLOYEES')",
    }
    pos = RuleSetSpec.from_conditions({name: texts[name] for name in order})
    message = row("UPDATE", "HR", "EMPLOYEES")
    assert dict(explain(message, pos)) == {"R1": True, "R2": False}
    decision = decide(message, positive=pos, negative=None)
    assert decision.action == PERFORM
    assert decision.rule is not None and decision.rule.name == "R1"


def test_d16_conflicting_negative_rules_discard() -> None:
    neg = RuleSetSpec.from_conditions(
        {
            "KEEP": "NOT (:dml.get_object_name() = 'DEPARTMENTS')",
            "DROP": ":dml.get_object_name() = 'DEPARTMENTS'",
        }
    )
    decision = decide(row("INSERT", "HR", "DEPARTMENTS"), positive=None, negative=neg)
    assert decision.action == DISCARD and decision.rule.name == "DROP"


def test_null_is_not_true_in_either_set() -> None:
    # G10 is NULL for an untagged LCR (E36): it neither performs nor discards.
    g10_like = ":dml.get_tag() = HEXTORAW('02')"
    nulls = RuleSetSpec.from_conditions({"TAG_02": g10_like})
    message = row("UPDATE", "HR", "DEPARTMENTS", tag=None)
    assert explain(message, nulls) == [("TAG_02", None)]
    assert decide(message, positive=nulls, negative=None).action == DISCARD
    assert decide(message, positive=None, negative=nulls).action == PERFORM


def test_a_rule_applies_only_to_its_message_kind() -> None:
    # Evaluated for a row LCR, :ddl is unbound and this hand-written rule would be TRUE.
    pos = RuleSetSpec.from_conditions({"NO_DDL_OWNER": ":ddl.get_object_owner() IS NULL"})
    assert pos.rules[0].applies_to == "ddl_lcr"
    assert decide(row(), positive=pos, negative=None).action == DISCARD
    assert explain(row(), pos) == [("NO_DDL_OWNER", None)]
    non_owner_ddl = ddl("ALTER TABLE", "TABLE", None, None, base_owner="HR", base_name="T")
    assert decide(non_owner_ddl, positive=pos, negative=None).action == PERFORM


def test_a_message_rule_applies_only_to_its_message_type() -> None:
    pos = RuleSetSpec.from_conditions(
        {"EUROPE_1": G15}, variables={'"VAR$_52"': "user:strmadmin.region_pri_msg"}
    )
    assert pos.rules[0].applies_to == "user:strmadmin.region_pri_msg"
    europe = region_msg("EUROPE", 1)
    assert decide(europe, positive=pos, negative=None).action == PERFORM
    other_type = type(europe)("STRMADMIN.OTHER_MSG", {"region": "EUROPE", "priority": 1})
    assert decide(other_type, positive=pos, negative=None).action == DISCARD
    assert decide(row(), positive=pos, negative=None).action == DISCARD


def test_all_hits_lists_every_true_positive_rule_in_order() -> None:
    pos = RuleSetSpec.from_conditions(
        {
            "SCHEMA": SCHEMA_HR_DML,
            "OTHER_TABLE": ":dml.get_object_name() = 'EMPLOYEES'",
            "TABLE": ":dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'DEPARTMENTS'",
        }
    )
    decision = decide(
        row("INSERT", "HR", "DEPARTMENTS"), positive=pos, negative=None, all_hits=True
    )
    assert [r.name for r in decision.hits] == ["SCHEMA", "TABLE"]
    first = decide(row("INSERT", "HR", "DEPARTMENTS"), positive=pos, negative=None)
    assert [r.name for r in first.hits] == ["SCHEMA"]


def test_explain_gives_each_rule_value_for_the_test_a_message_page() -> None:
    rule_set = RuleSetSpec.from_conditions(
        {"N_JOB_HISTORY": G9, "P_HR": SCHEMA_HR_DML, "TAGGED": ":dml.is_null_tag() = 'N'"}
    )
    result = explain(row("INSERT", "HR", "JOB_HISTORY", tag=b"\x01"), rule_set)
    assert result == [("N_JOB_HISTORY", True), ("P_HR", False), ("TAGGED", True)]
