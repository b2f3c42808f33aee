"""The PostgreSQL compiler, construct by construct: each hand-picked (condition, message) gives the
stated truth value in SQL and in Python, the ``aq_rule_*`` helper functions agree with their
Python twins of ``rules.lang.values``, and the expression drops into a query on ``aq_message``."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queues import engine, services
from rules.lang import (
    ConditionError,
    Or,
    UserMessage,
    compile_python,
    parse,
    to_text,
    variables_of,
)
from rules.lang import values as v
from rules.lang.ast import Call, Compare, Literal
from rules.lang.compile_sql import compile_sql, factor_rule_sets
from tests.rules.lang_seed import (
    G7,
    G12_SUBSET_INSERT,
    G13_SUBSET_UPDATE,
    G14_SUBSET_DELETE,
    ddl,
    row,
)
from tests.rules.strategies import (
    bindings,
    python_values,
    queue_row,
    sql_values,
    store,
    texts,
)
from tests.rules.test_seed_conditions_evaluate_as_the_spec_says import CASES as SEED_CASES

T, F, N = True, False, None
REGIONS = {"insert": G12_SUBSET_INSERT, "update": G13_SUBSET_UPDATE, "delete": G14_SUBSET_DELETE}


def user(payload, type_name: str = "T1") -> UserMessage:
    return UserMessage(type_name, payload)


def regions(command: str, **kw) -> object:
    return row(command, "HR", "REGIONS", **kw)


# Subset rules of hr.regions, region_id = 2 (spec/rules.md §7.4 S1 to S16): which of the three
# rules is TRUE (None: none of them).
SUBSET_CASES = [
    ("S1", regions("INSERT", new={"REGION_ID": 2}), "insert"),
    ("S2", regions("INSERT", new={"REGION_ID": 3}), None),
    ("S3", regions("INSERT", new={"REGION_ID": None}), None),
    ("S4", regions("UPDATE", old={"REGION_ID": 4}, new={"REGION_ID": 2}), "insert"),
    ("S5", regions("UPDATE", old={"REGION_ID": None}, new={"REGION_ID": 2}), "insert"),
    ("S6", regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 2}), "update"),
    ("S7", regions("UPDATE", old={"REGION_ID": 2}, new={"NAME": "x"}), "update"),
    ("S8", regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 1}), "delete"),
    ("S9", regions("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": None}), "delete"),
    ("S10", regions("UPDATE", old={"REGION_ID": 1}, new={"REGION_ID": 1}), None),
    ("S11", regions("UPDATE", new={"REGION_ID": 2}), None),
    ("S12", regions("DELETE", old={"REGION_ID": 2}), "delete"),
    ("S13", regions("DELETE", old={"REGION_ID": 3}), None),
    ("S14", regions("INSERT", new={"REGION_ID": 2}, tag=b"\x01"), None),
    ("S15", regions("INSERT", new={"REGION_ID": 2}, src="DBS2.EXAMPLE.COM"), None),
    ("S16", row("INSERT", "HR", "EMPLOYEES", new={"REGION_ID": 2}), None),
]

LOC = row("INSERT", "HR", "LOCATIONS")
IX = ddl("CREATE INDEX", "INDEX", "HR", "C_IX", base_owner="HR", base_name="COUNTRIES")
COLS = row(
    "UPDATE",
    "HR",
    "T",
    old={"REGION_ID": 2, "ID": "02"},
    new={"ID": None, "Odd name": "v", "N": 2.5, "D": "2024-05-01T01:00:00+01:00", "H": "a0b"},
)

# (id, condition, message, expected): one construct each, Oracle's answer where it has one.
CONSTRUCT_CASES = [
    ("in-null-unknown", ":dml.get_command_type() IN ('UPDATE', NULL)", LOC, N),
    ("in-null-found", ":dml.get_command_type() IN ('INSERT', NULL)", LOC, T),
    ("not-in-null", ":dml.get_command_type() NOT IN ('UPDATE', NULL)", LOC, N),
    ("not-in-found", ":dml.get_command_type() NOT IN ('INSERT', NULL)", LOC, F),
    ("in-false", ":dml.get_command_type() IN ('UPDATE', 'DELETE')", LOC, F),
    ("in-values", ":msg.a IN (:msg.b, 'z')", user({"a": "x", "b": "x"}), T),
    ("like-prefix", ":dml.get_object_name() LIKE 'LOC%'", LOC, T),
    ("like-underscore", ":dml.get_object_name() LIKE 'LOCATION_'", LOC, T),
    ("like-underscore-short", ":dml.get_object_name() LIKE '_OC'", LOC, F),
    ("like-infix", ":dml.get_object_name() LIKE '%CAT%'", LOC, T),
    ("like-escape", ":msg.code LIKE 'A!%%' ESCAPE '!'", user({"code": "A%B"}), T),
    ("like-escape-literal", ":msg.code LIKE 'A!%%' ESCAPE '!'", user({"code": "AB"}), F),
    (
        "like-bad-escape",
        ":msg.code LIKE :msg.pat ESCAPE '!'",
        user({"code": "AB", "pat": "A!B"}),
        N,
    ),
    (
        "like-dynamic-escape",
        ":msg.c LIKE :msg.p ESCAPE :msg.e",
        user({"c": "_", "p": "#_", "e": "#"}),
        T,
    ),
    ("like-no-escape-backslash", ":msg.code LIKE 'A\\%'", user({"code": "A\\xyz"}), T),
    ("like-backslash-is-literal", ":msg.code LIKE 'A\\%'", user({"code": "A%"}), F),
    ("like-dynamic-pattern", ":msg.code LIKE :msg.pat", user({"code": "A\\B", "pat": "A\\%"}), T),
    ("like-number", ":msg.priority LIKE '1%'", user({"priority": 10}), T),
    ("like-null-pattern", ":msg.code LIKE NULL", user({"code": "A"}), N),
    ("number-string", ":msg.priority = '1'", user({"priority": 1}), T),
    ("number-spaced-string", ":msg.priority = ' 01 '", user({"priority": 1}), T),
    ("number-bad-string", ":msg.priority = 'x'", user({"priority": 1}), N),
    ("string-number", ":msg.region = 2", user({"region": "02"}), T),
    ("string-bad-number", ":msg.region = 2", user({"region": "x"}), N),
    ("strings-as-strings", ":msg.region < '9'", user({"region": "10"}), T),
    ("numbers-as-numbers", ":msg.priority < 9", user({"priority": 10}), F),
    ("json-fraction", ":msg.priority = 2.5", user({"priority": 2.5}), T),
    ("json-tenth", ":msg.priority = 0.1", user({"priority": 0.1}), T),
    ("json-big-int", ":msg.n = 100000000000000000000", user({"n": 10**20}), T),
    ("json-true", ":msg.flag = 'true'", user({"flag": True}), T),
    ("json-object", ":msg.nested IS NOT NULL", user({"nested": {}}), T),
    ("json-object-compare", ":msg.nested = 'x'", user({"nested": {}}), N),
    ("json-list", ":msg.items IS NULL", user({"items": []}), F),
    ("nested", ":msg.address.city = 'PARIS'", user({"address": {"City": "PARIS"}}), T),
    ("quoted-attr", ":msg.\"Region\" = 'a'", user({"Region": "a", "REGION": "b"}), T),
    ("upper-key-wins", ":msg.region = 'b'", user({"Region": "a", "REGION": "b"}), T),
    ("missing-attr", ":msg.missing IS NULL", user({"a": 1}), T),
    ("missing-attr-compare", ":msg.missing = 'x'", user({"a": 1}), N),
    ("scalar-payload", ":msg = 'hello'", user("hello"), T),
    ("scalar-numeric-text", ":msg = '02'", user("02"), T),
    ("bound-variable", ":msg IS NULL", user("hello"), F),
    ("unbound-variable", ":msg IS NULL", LOC, T),
    ("unbound-field", ":ddl.get_object_owner() IS NULL", LOC, T),
    ("unbound-compare", ":ddl.get_object_owner() = 'HR'", LOC, N),
    ("two-variables", ":dml.get_object_owner() = :msg.region", LOC, N),
    ("raw-equal", ":dml.get_tag() = HEXTORAW('02')", row(tag=b"\x02"), T),
    ("raw-odd-digits", ":dml.get_tag() = HEXTORAW('2')", row(tag=b"\x02"), T),
    ("raw-string", ":dml.get_tag() = '02'", row(tag=b"\x02"), T),
    ("raw-order", ":dml.get_tag() > HEXTORAW('01')", row(tag=b"\x01\x02"), T),
    ("raw-number", ":dml.get_tag() = 2", row(tag=b"\x02"), N),
    ("null-tag-n", ":dml.is_null_tag() = 'N'", row(tag=b"\x01"), T),
    ("null-tag-y", ":dml.is_null_tag() = 'N'", row(), F),
    ("null-tag-order", ":dml.is_null_tag() > 'M'", row(), T),
    ("use-old", ":dml.get_value('NEW', '\"REGION_ID\"').AccessNumber() = 2", COLS, T),
    ("no-use-old", ":dml.get_value('NEW', '\"REGION_ID\"', 'N').AccessNumber() = 2", COLS, N),
    ("plain-column-upper", ":dml.get_value('OLD', 'region_id').AccessNumber() = 2", COLS, T),
    ("quoted-column-exact", ":dml.get_value('OLD', '\"region_id\"') IS NULL", COLS, T),
    ("odd-column", ":dml.get_value('NEW', '\"Odd name\"').AccessVarchar2() = 'v'", COLS, T),
    ("varchar-of-number", ":dml.get_value('NEW', '\"N\"').AccessVarchar2() = '2.5'", COLS, T),
    ("number-of-string", ":dml.get_value('OLD', '\"ID\"').AccessNumber() = 2", COLS, T),
    ("date", ":dml.get_value('NEW', '\"D\"').AccessDate() = '2024-05-01'", COLS, T),
    ("date-order", ":dml.get_value('NEW', '\"D\"').AccessDate() > '2024-04-30 23:59'", COLS, T),
    ("raw-access", ":dml.get_value('NEW', '\"H\"').AccessRaw() = HEXTORAW('0A0B')", COLS, T),
    ("carried-null", ":dml.get_value('NEW', '\"ID\"') IS NOT NULL", COLS, T),
    ("carried-null-value", ":dml.get_value('NEW', '\"ID\"').AccessNumber() IS NULL", COLS, T),
    ("field-number", ":dml.get_object_name() = 5", row(name="05"), T),
    ("field-not-number", ":dml.get_object_name() < 5", LOC, N),
    (
        "date-of-upper",
        ":dml.get_value('NEW', '\"D\"').AccessDate() "
        "= UPPER(:dml.get_value('NEW', '\"D\"').AccessVarchar2())",
        COLS,
        T,
    ),
    ("dynamic-column", ":dml.get_value('OLD', :dml.get_object_name()) IS NOT NULL", COLS, F),
    ("exists-null", "NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE :msg.p = 1)", user({"p": None}), T),
    ("not-null", "NOT (:msg.p = 1)", user({"p": None}), N),
    ("upper-full-case", "UPPER(:msg.street) = 'STRASSE'", user({"street": "straße"}), T),
    ("lower-field", "LOWER(:dml.get_object_name()) = 'locations'", LOC, T),
    ("code-point-order", ":msg.region > 'Z'", user({"region": "é"}), T),
    ("code-point-lower", ":msg.region > 'Z'", user({"region": "a"}), T),
    ("code-point-false", ":msg.region > 'Z'", user({"region": "B"}), F),
    ("ddl-object-type", ":ddl.get_object_type() = 'INDEX'", IX, T),
    ("ddl-base-table", ":ddl.get_base_table_name() = 'COUNTRIES'", IX, T),
    ("null-source", ":dml.get_source_database_name() >= ' '", row(src=None), N),
    ("constant-true", "'a' = 'a'", LOC, T),
    ("constant-null", "1 = NULL", LOC, N),
]

ALL_CASES = [
    *SEED_CASES,
    *CONSTRUCT_CASES,
    *[
        (f"{case}-{kind}", text, msg, kind == which)
        for case, msg, which in SUBSET_CASES
        for kind, text in REGIONS.items()
    ],
]
IDS = [c[0] for c in ALL_CASES]


@pytest.fixture(scope="module")
def sql_matrix(rules_pg):
    """Every condition against every message, in one query; and the same in Python."""
    rows = [queue_row(c[2]) for c in ALL_CASES]
    messages = store(rules_pg, rows)
    conds = [parse(c[1]) for c in ALL_CASES]
    return sql_values(rules_pg, conds), python_values(conds, messages)


@pytest.mark.parametrize(("case", "condition", "message", "expected"), ALL_CASES, ids=IDS)
def test_condition_has_the_same_value_in_sql_and_python(
    sql_matrix, case, condition, message, expected
) -> None:
    i = IDS.index(case)
    sql, python = sql_matrix
    if case.startswith("S") and "-" in case:
        # The subset table says which rule is TRUE; the others are FALSE or NULL.
        assert (sql[i][i] is True) == expected
    else:
        assert sql[i][i] is expected
    assert sql[i][i] is python[i][i]


def test_every_condition_agrees_on_every_other_message_too(sql_matrix) -> None:
    sql, python = sql_matrix
    bad = [
        (IDS[i], IDS[j], sql[i][j], python[i][j])
        for i in range(len(IDS))
        for j in range(len(IDS))
        if sql[i][j] is not python[i][j]
    ]
    assert not bad


# --- the compiled text ---------------------------------------------------------------------------


def test_literals_travel_as_parameters() -> None:
    e = compile_sql(parse(":msg.region = 'x''; DROP TABLE aq_message; --' AND :msg.n = 2"))
    assert "DROP" not in e.sql
    assert "x'; DROP TABLE aq_message; --" in e.params.values()
    assert "2" in e.params.values()


def test_the_text_holds_no_percent_sign_but_placeholders() -> None:
    e = compile_sql(parse(":msg.a LIKE '%x%' AND :msg.b LIKE :msg.c ESCAPE '%'"))
    assert "%" not in e.sql.replace("%(", "")


def test_parameter_prefix_and_alias() -> None:
    e = compile_sql(parse(":dml.get_object_owner() = 'HR'"), alias="q", param_prefix="c7_")
    assert set(e.params) == {"c7_0"}
    assert "q.payload" in e.sql and "q.kind" in e.sql


def test_a_rule_set_of_table_rules_is_factored_into_one_in_list() -> None:
    tables = [f"T{i:02d}" for i in range(50)]
    rule_set = Or(tuple(parse(G7.replace("LOCATIONS", t)) for t in tables))
    assert to_text(factor_rule_sets(rule_set)) == (
        ":dml.get_object_owner() = 'HR' AND :dml.is_null_tag() = 'Y' AND "
        ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' AND "
        f":dml.get_object_name() IN ({', '.join(repr(t) for t in tables)})"
    )
    e = compile_sql(rule_set)
    assert e.sql.count(" IN (") == 1
    assert len(e.params) == 52  # the owner, the source and 50 names; 'Y' became a tag test


def test_unknown_style_and_bad_alias_are_refused() -> None:
    with pytest.raises(ValueError):
        compile_sql(parse("1 = 1"), params_style="qmark")
    with pytest.raises(ValueError):
        compile_sql(parse("1 = 1"), alias="m; DROP")


def test_a_node_no_compiler_knows_is_a_condition_error() -> None:
    with pytest.raises(ConditionError):
        compile_sql(Compare("=", Call(None, "NVL", (Literal(1),)), Literal(1)))


def test_a_typed_user_variable_is_bound_only_to_its_type(rules_pg) -> None:
    variables = {'"VAR$_52"': "user:STRMADMIN.REGION_PRI_MSG"}
    cond = parse(":\"VAR$_52\".region = 'EUROPE'")
    rows = [
        ("USER", "strmadmin.region_pri_msg", {"region": "EUROPE"}),
        ("USER", "OTHER", {"region": "EUROPE"}),
        ("ROW_LCR", "", queue_row(LOC)[2]),
    ]
    messages = store(rules_pg, rows)
    assert sql_values(rules_pg, [cond], variables) == [[T, N, N]]
    assert python_values([cond], messages, variables) == [[T, N, N]]


@pytest.mark.django_db(transaction=True)
def test_the_expression_filters_aq_message_rows(admin_user, queue) -> None:
    kinds = [
        engine.NewMessage(kind="ROW_LCR", payload=queue_row(LOC)[2]),
        engine.NewMessage(kind="ROW_LCR", payload=queue_row(row(tag=b"\x02"))[2]),
        engine.NewMessage(kind="USER", type_name="T1", payload={"region": "EUROPE"}),
    ]
    ids = services.message_enqueue(user=admin_user, queue=queue, messages=kinds)
    from django.db import connection

    def matching(text: str) -> list[int]:
        e = compile_sql(parse(text))
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT m.id FROM aq_message m WHERE m.queue_id = %(qid)s AND {e.sql} "
                "ORDER BY m.id",
                {"qid": queue.id, **e.params},
            )
            return [r[0] for r in cur.fetchall()]

    assert matching(":dml.get_object_name() = 'LOCATIONS'") == [ids[0]]
    assert matching(":dml.is_null_tag() = 'N'") == [ids[1]]
    assert matching(":msg.region = 'EUROPE'") == [ids[2]]
    assert matching("NOT (:dml.get_object_owner() = 'HR')") == []


# --- the helper functions against their Python twins ---------------------------------------------

_HYPOTHESIS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _column(conn, function: str, inputs: list, cast: str = "text") -> list:
    rows = conn.execute(
        f"SELECT {function}(x) FROM unnest(%s::{cast}[]) WITH ORDINALITY AS u(x, i) ORDER BY i",
        [inputs],
    ).fetchall()
    return [r[0] for r in rows]


number_texts = st.one_of(
    st.from_regex(
        r" {0,2}[+-]?[0-9]{0,22}(\.[0-9]{0,22})?([eE][+-]?[0-9]{1,4})? {0,2}", fullmatch=True
    ),
    st.sampled_from(
        [
            "0e999999999999999999",
            "0e1000000000000000000",
            "0.0e1000000000000000000",
            "0e-1999999999999999997",
            "0e-1999999999999999998",
            "1e-130",
            "1e-131",
            "9.99e125",
            "1e126",
            "0000000000000000000001",
            "\t5",
            "5\u00a0",
        ]
    ),
    texts,
)


@_HYPOTHESIS
@given(st.lists(number_texts, min_size=1, max_size=50))
def test_to_number_is_values_to_number(rules_pg, inputs) -> None:
    assert _column(rules_pg, "aq_rule_to_number", inputs) == [v.to_number(s) for s in inputs]


@_HYPOTHESIS
@given(st.lists(st.one_of(st.from_regex(r"[0-9A-Fa-f]{0,7}", fullmatch=True), texts), max_size=50))
def test_hextoraw_is_values_hex_to_raw(rules_pg, inputs) -> None:
    assert _column(rules_pg, "aq_rule_hextoraw", inputs) == [v.hex_to_raw(s) for s in inputs]


date_texts = st.from_regex(
    r" ?[0-9]{4}-[01][0-9]-[0-3][0-9]([T ][0-2][0-9]:[0-6][0-9](:[0-6][0-9](\.[0-9]{1,7})?)?)?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})? ?",
    fullmatch=True,
)


def _python_date(text: str):
    try:
        return v.to_date(text)
    except OverflowError:  # reported: values.to_date should return None here
        return None


@_HYPOTHESIS
@given(st.lists(st.one_of(date_texts, texts), max_size=50))
def test_to_date_and_date_text_are_values_to_date_and_date_to_text(rules_pg, inputs) -> None:
    expected = [_python_date(s) for s in inputs]
    assert _column(rules_pg, "aq_rule_to_date", inputs) == expected
    dates = [d for d in expected if d is not None]
    got = _column(rules_pg, "aq_rule_date_text", dates, "timestamp")
    assert got == [v.date_to_text(d) for d in dates]


def test_to_date_is_null_where_python_overflows(rules_pg) -> None:
    inputs = ["0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00", "2024-01-01T00:00+24:00"]
    assert _column(rules_pg, "aq_rule_to_date", inputs) == [None, None, None]


json_numbers = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    # Decimals as JSON text with many digits and large exponents (within what jsonb and
    # json.loads accept).
    st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: abs(d.adjusted()) < 1000),
)


@_HYPOTHESIS
@given(st.lists(json_numbers, min_size=1, max_size=50))
def test_json_numbers_read_as_the_engine_reads_them(rules_pg, inputs) -> None:
    docs = [str(x) if isinstance(x, Decimal) else json.dumps(x) for x in inputs]
    rows = rules_pg.execute(
        "SELECT x, aq_rule_json_number(x), aq_rule_json_text(x), aq_rule_json_is_null(x) "
        "FROM unnest(%s::jsonb[]) WITH ORDINALITY AS u(x, i) ORDER BY i",
        [docs],
    ).fetchall()
    for doc, number, text, is_null in rows:
        value = v.from_json_value(doc)  # psycopg gave back json.loads of the stored text
        assert (number, text, is_null) == (value, v.to_text(value), value is None), doc


@_HYPOTHESIS
@given(
    st.lists(
        st.one_of(texts, st.sampled_from(['"a"', ' "A b" ', '"a"b"', '""', "x y"])), max_size=30
    )
)
def test_column_name_is_values_column_name(rules_pg, inputs) -> None:
    assert _column(rules_pg, "aq_rule_column_name", inputs) == [v.column_name(s) for s in inputs]


@_HYPOTHESIS
@given(st.lists(texts, max_size=30))
def test_upper_and_lower_are_pythons(rules_pg, inputs) -> None:
    assert _column(rules_pg, "aq_rule_upper", inputs) == [s.upper() for s in inputs]
    assert _column(rules_pg, "aq_rule_lower", inputs) == [s.lower() for s in inputs]


like_texts = st.text(st.sampled_from("ab%_!\\é"), max_size=5)


@_HYPOTHESIS
@given(
    st.lists(
        st.tuples(like_texts, like_texts, st.sampled_from(["!", "%", "_", "a", "é"])), max_size=40
    )
)
def test_like_escape_is_values_like(rules_pg, triples) -> None:
    got = rules_pg.execute(
        "SELECT aq_rule_like_escape(t, p, e) FROM unnest(%s::text[], %s::text[], %s::text[]) "
        "WITH ORDINALITY AS u(t, p, e, i) ORDER BY i",
        [[t for t, _, _ in triples], [p for _, p, _ in triples], [e for _, _, e in triples]],
    ).fetchall()
    assert [r[0] for r in got] == [v.like(t, p, e) for t, p, e in triples]


keys = st.sampled_from(
    ["region", "REGION", "Region", "rEgion", "\u0131d", "id", "ID", "ß", "ss", "SS"]
)


@_HYPOTHESIS
@given(st.lists(st.dictionaries(keys, st.integers(0, 9), max_size=5), min_size=1, max_size=20))
def test_attribute_lookup_is_struct_attrs(rules_pg, payloads) -> None:
    for name in ("REGION", "ID", "SS"):
        rows = rules_pg.execute(
            "SELECT p, aq_rule_attr(p, %s) FROM unnest(%s::jsonb[]) WITH ORDINALITY AS u(p, i) "
            "ORDER BY i",
            [name, [json.dumps(p) for p in payloads]],
        ).fetchall()
        for back, got in rows:
            assert got == v.Struct(back).attrs.get(name), (back, name)


def test_python_and_sql_bind_the_same_variables() -> None:
    cond = parse(":dml.get_object_owner() = 'HR' OR :msg.x = 1 OR :\"VAR$_1\".x = 1 OR :foo.x = 1")
    b = bindings(LOC, variables_of(cond))
    assert b == {"DML": LOC, "MSG": None, "VAR$_1": None, "FOO": None}
    assert compile_python(cond)(b) is True
