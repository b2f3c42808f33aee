"""The rule-set index is only a shortcut: over generated rule sets and messages it gives the same
decisions, the same deciding rule and the same TRUE rules as evaluating every rule in order, as the
pseudocode of spec/rules.md §2.3 does."""

from __future__ import annotations

from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.lang import (
    ConditionError,
    IsNull,
    RuleSetSpec,
    UserMessage,
    compile_rule,
    decide,
    equality_keys,
    parse,
    to_text,
)
from tests.rules.lang_seed import (
    G8,
    G12_SUBSET_INSERT,
    G13_SUBSET_UPDATE,
    G14_SUBSET_DELETE,
    G15,
    row,
)
from tests.rules.lang_strategies import (
    NAMES,
    OWNERS,
    SOURCES,
    STRINGS,
    USER_TYPES,
    conditions,
    messages,
)

owners, names, sources = (st.sampled_from(x) for x in (OWNERS, NAMES, SOURCES))
flags = st.booleans()


@st.composite
def system_rules(draw) -> str:
    """Conditions shaped like the generators' (§3.4.5), with constants from the messages' domain."""
    var = draw(st.sampled_from(["dml", "ddl"]))
    o, n, s = draw(owners), draw(names), draw(sources)
    kind = draw(st.sampled_from(["global", "schema", "table"]))
    parts = []
    if kind == "schema":
        parts.append(
            f"(:dml.get_object_owner() = '{o}')"
            if var == "dml"
            else f"(:ddl.get_object_owner() = '{o}' or :ddl.get_base_table_owner() = '{o}')"
        )
    elif kind == "table":
        own = f"(:{var}.get_object_owner() = '{o}' and :{var}.get_object_name() = '{n}')"
        base = f" or (:ddl.get_base_table_owner() = '{o}' and :ddl.get_base_table_name() = '{n}')"
        parts.append(f"({own}{base if var == 'ddl' else ''})")
    if draw(flags):
        parts.append(f":{var}.is_null_tag() = 'Y'")
    if draw(flags):
        parts.append(f":{var}.get_source_database_name() = '{s}'")
    if not parts:
        parts.append(
            f"( :{var}.get_source_database_name()>=' ' OR :{var}.get_source_database_name()<=' ')"
        )
    text = "(" + " and ".join(parts) + " )"
    if draw(flags):
        tag = draw(st.sampled_from(["HEXTORAW('02')", "'01'", "HEXTORAW('1')"]))
        text = f"(({text}) and (:{var}.get_tag() = {tag}))"
    return text


@st.composite
def message_rules(draw) -> str:
    var = draw(st.sampled_from([":msg", ':"VAR$_52"', ':"VAR$_7"']))
    region = draw(st.sampled_from(STRINGS))
    priority = draw(st.sampled_from(["'1'", "1", "'01'", "2", "1.0", "'x'", "NULL"]))
    join = draw(st.sampled_from(["AND", "OR"]))
    return f"{var}.region = '{region}' {join} {var}.PRIORITY = {priority}"


subset_rules = st.builds(
    lambda text, o, n: text.replace("'HR'", f"'{o}'").replace("'REGIONS'", f"'{n}'"),
    st.sampled_from([G12_SUBSET_INSERT, G13_SUBSET_UPDATE, G14_SUBSET_DELETE]),
    owners,
    names,
).map(lambda t: t.replace('"REGION_ID"', '"ID"'))
in_rules = st.builds(
    lambda o, items, neg: f":dml.get_object_owner() {'NOT ' if neg else ''}IN ({items})",
    owners,
    st.lists(st.sampled_from(["'HR'", "'OE'", "NULL", "'X'"]), min_size=1, max_size=3).map(
        ", ".join
    ),
    flags,
)
any_condition = st.one_of(
    system_rules(), system_rules(), message_rules(), subset_rules, in_rules, conditions.map(to_text)
)


@st.composite
def rule_sets(draw, max_size: int):
    texts = draw(st.lists(any_condition, max_size=max_size))
    rules = []
    for i, text in enumerate(texts):
        user_type = draw(st.sampled_from([None, *USER_TYPES]))
        try:
            if user_type and ("msg" in text or "VAR$" in text):
                var = next(v for v in ("VAR$_52", "VAR$_7", "MSG") if v.lower() in text.lower())
                rule = compile_rule(f"R{i}", text, variables={f'"{var}"': f"user:{user_type}"})
            else:
                rule = compile_rule(f"R{i}", text)
        except ConditionError:
            continue  # generated trees may use a member their variable's kind lacks
        rules.append(rule)
    return rules


def naive_true_rules(rules, message):
    b = {"MSG": message, "VAR$_52": message, "VAR$_7": message, "Var x": message}
    if not isinstance(message, UserMessage):
        b = {"DML" if message.kind == "row_lcr" else "DDL": message}
    return [r for r in rules if r.applies(message) and r.fn(b) is True]


def naive_decide(message, positive, negative):
    """spec/rules.md §2.3, rule by rule."""
    if negative is not None:
        hits = naive_true_rules(negative, message)
        if hits:
            return "DISCARD", hits[0].name
    if positive is None:
        return "PERFORM", None
    if not positive:
        return "DISCARD", None
    hits = naive_true_rules(positive, message)
    return ("PERFORM", hits[0].name) if hits else ("DISCARD", None)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule_sets(max_size=12),
    st.one_of(st.none(), rule_sets(max_size=4)),
    st.lists(messages, min_size=1, max_size=8),
    st.booleans(),
)
def test_indexed_decisions_equal_naive_decisions(pos_rules, neg_rules, batch, no_positive) -> None:
    positive = None if no_positive else RuleSetSpec(pos_rules)
    negative = None if neg_rules is None else RuleSetSpec(neg_rules)
    for message in batch:
        decision = decide(message, positive=positive, negative=negative)
        got = (decision.action, decision.rule.name if decision.rule else None)
        want = naive_decide(message, None if no_positive else pos_rules, neg_rules)
        assert got == want, (message, [r.text for r in pos_rules])
        if positive is not None:
            indexed = [r.name for r in positive.true_rules(message)]
            assert indexed == [r.name for r in naive_true_rules(pos_rules, message)]


def test_a_set_of_fifty_table_rules_evaluates_only_the_matching_one() -> None:
    texts = {
        f"T{i}": (
            f"(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'T{i}')) "
            "and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DB1' )"
        )
        for i in range(50)
    }
    rule_set = RuleSetSpec.from_conditions(texts | {"GLOBAL": "1 = 1 OR :dml.get_tag() IS NULL"})
    message = row("INSERT", "HR", "T17", src="DB1")
    assert [rule_set.rules[i].name for i in rule_set.candidates(message)] == ["T17", "GLOBAL"]
    assert rule_set.candidates(row("INSERT", "HR", "T99", src="DB1")) == [50]
    assert rule_set.candidates(row("INSERT", "HR", "T17", src="DB2")) == [50]


def test_equality_keys_spread_a_ddl_table_rule_over_two_alternatives() -> None:
    alternatives = equality_keys(parse(G8))
    assert [sorted(to_text_of(k) for k in alt) for alt in alternatives] == [
        sorted(
            [
                ":ddl.get_object_owner()",
                ":ddl.get_object_name()",
                ":ddl.is_null_tag()",
                ":ddl.get_source_database_name()",
            ]
        ),
        sorted(
            [
                ":ddl.get_base_table_owner()",
                ":ddl.get_base_table_name()",
                ":ddl.is_null_tag()",
                ":ddl.get_source_database_name()",
            ]
        ),
    ]
    (alt,) = equality_keys(parse(G15))
    assert sorted(alt.values()) == ["1", "EUROPE"]
    assert equality_keys(parse(":dml.get_object_owner() != 'HR'")) is None
    assert equality_keys(parse(":dml.get_object_owner() = NULL")) == []


def to_text_of(expr) -> str:
    return to_text(IsNull(expr)).removesuffix(" IS NULL")


ATTR_CONSTANTS = ["'1'", "'01'", "1", "1.0", "'x'", "'02'", "' 1'", "'2024-01-01'"]
ATTR_VALUES = [
    *("1", "01", 1, 1.0, " 1", "x", None, True, "2", 2, "2024-01-01", {"a": 1}, [1]),
    *(datetime(2024, 1, 1), b"\x01", b"\x02"),
]


def test_the_index_follows_implicit_conversion_for_every_pair_of_families() -> None:
    rules = [
        compile_rule(f"R{i}", f":msg.priority = {c} OR :msg.region = {c}")
        for i, c in enumerate(ATTR_CONSTANTS)
    ]
    indexed = RuleSetSpec(rules)
    for value in ATTR_VALUES:
        for key in ("priority", "PRIORITY", "region"):
            message = UserMessage("T", {key: value})
            want = [r.name for r in naive_true_rules(rules, message)]
            assert [r.name for r in indexed.true_rules(message)] == want, (key, value)


def test_the_index_compares_tags_as_raw() -> None:
    constants = ["HEXTORAW('02')", "'02'", "'2'", "HEXTORAW('0002')", "'zz'", "NULL"]
    rules = [compile_rule(f"R{i}", f":dml.get_tag() = {c}") for i, c in enumerate(constants)]
    indexed = RuleSetSpec(rules)
    for tag in (None, b"\x02", b"\x00\x02", b"\x01"):
        message = row(tag=tag)
        want = [r.name for r in naive_true_rules(rules, message)]
        assert [r.name for r in indexed.true_rules(message)] == want, tag
