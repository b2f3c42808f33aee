"""Declarative transformations as Spark expressions (jobs/spark/declarative.py) write exactly the
payload the rules engine's pipeline writes (run_transformations → message_content →
json.dumps, as jobs/spark/transforms.py stores it), or leave the row to the Python path (NULL).

Payloads are read as ``aq_message.payload::text`` holds them (through PostgreSQL's jsonb) and as
plain ``json.dumps`` text; numbers are compared as exact decimals, as jsonb compares them."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from jobs.spark.declarative import declarative_column, supported_steps
from rules.lang import message_from_queue
from rules.lang.pipeline import RuleTransforms, message_content, run_transformations
from rules.lang.transform import COLUMN_TYPES, Declarative, TransformationError, declarative

pytestmark = pytest.mark.spark

# Column keys as payloads carry them: upper, mixed and lower case, spaces, quotes, non-ASCII.
KEYS = ["ID", "NAME", "Name", "name", "A B", 'Q"T', "Région", "SALARY", "x.y"]
# The same names as a user writes them in a step (plain names are upper-cased, quoted kept).
NAMES = ["id", "NAME", '"Name"', '"name"', '"A B"', '"Q""T"', '"Région"', "salary", "NEW_COL"]
TABLES = [None, "HR.EMP", "hr.emp", "SCOTT.DEPT", "HR.Emp"]


# --- payloads --------------------------------------------------------------------------------

_text = st.text(  # jsonb refuses NUL and lone surrogates
    st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=6
)
# Doubles whose Java text is not repr's (5e-324 prints 4.9E-324, 1e23 9.999999999999999E22),
# needs 17 digits (0.1 + 0.2), or overflows the 15 digits of a "float" written as an integer.
_edge_floats = st.sampled_from(
    [0.1 + 0.2, 1e23, 5e-324, 2.82879384806159e17, 1e-7, 2.5e-300, 12345678901234567890.0, -0.0]
)
_scalars = st.one_of(
    st.none(),
    _edge_floats,
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.integers(-(10**45), 10**45),  # beyond long, decimal(38) and double
    st.integers(-(10**7), 10**7).map(lambda i: i / 100),  # prices and the like
    st.floats(allow_nan=False, allow_infinity=False),  # any double, subnormals included
    _text,
)
_nested = st.recursive(  # mostly renderable leaves; a boolean or a fraction makes a fallback
    st.one_of(st.none(), st.integers(-(10**30), 10**30), _text, st.sampled_from([True, 1.5])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=4,
).filter(lambda v: isinstance(v, list | dict))
_values = st.one_of(_scalars, _edge_floats, _nested)
_columns = st.dictionaries(st.sampled_from(KEYS), _values, max_size=4)

payloads = st.fixed_dictionaries(
    {
        "command_type": st.sampled_from(["INSERT", "UPDATE", "DELETE", "LOB WRITE", "update"]),
        "object_owner": st.sampled_from(["HR", "hr", "SCOTT"]),
        "object_name": st.sampled_from(["EMP", "Emp", "DEPT"]),
    },
    optional={
        "source_database_name": st.sampled_from([None, "DB1.EXAMPLE"]),
        "tag": st.sampled_from([None, "", "0a1B", "FF", "abc", "zz"]),  # two refused
        "old_values": st.one_of(st.none(), _columns, _columns),
        "new_values": st.one_of(st.none(), _columns, _columns),
        "kind": st.just("row_lcr"),  # dropped by the pipeline
        "NEW_VALUES": _columns,  # field names are case-sensitive: ignored
    },
)
# A few payloads the pipeline refuses (it reports an error; the expressions must not pass them).
bad_payloads = st.sampled_from(
    [
        {"command_type": "INSERT", "object_owner": "HR"},
        {"command_type": 5, "object_owner": "HR", "object_name": "EMP"},
        {"command_type": "INSERT", "object_owner": "HR", "object_name": "EMP", "new_values": [1]},
        {"command_type": "INSERT", "object_owner": None, "object_name": "EMP"},
        [1, 2],
    ]
)


# --- steps -----------------------------------------------------------------------------------


def _build(kind: str, draw: Any) -> Declarative | None:
    common = {"step_number": draw(st.integers(0, 3))}
    vt = draw(st.sampled_from([None, "OLD", "NEW", "*"]))
    name = st.sampled_from(NAMES)
    try:
        if kind == "KEEP COLUMNS":
            d = declarative(
                kind, column_list=draw(st.lists(name, min_size=1, max_size=3)), value_type=vt
            )
        elif kind == "DELETE COLUMN":
            d = declarative(kind, column_name=draw(name), value_type=vt)
        elif kind == "RENAME COLUMN":
            d = declarative(
                kind, from_column_name=draw(name), to_column_name=draw(name), value_type=vt
            )
        elif kind == "ADD COLUMN":
            value = draw(
                st.one_of(
                    st.none(),
                    st.integers(-(10**45), 10**45),
                    st.floats(allow_nan=False, allow_infinity=False),
                    _text,
                    st.booleans(),
                )
            )
            d = declarative(kind, column_name=draw(name), column_value=value, value_type=vt)
        elif kind == "RENAME TABLE":
            d = declarative(
                kind,
                from_table_name=draw(st.sampled_from(["hr.emp", '"hr".emp', "scott.dept"])),
                to_table_name=draw(st.sampled_from(["hr.emp2", "x.y", "scott.dept"])),
            )
        else:
            d = declarative(
                kind,
                from_schema_name=draw(st.sampled_from(["hr", '"hr"', "scott", "x"])),
                to_schema_name=draw(st.sampled_from(["hr2", "scott", "hr"])),
            )
    except TransformationError:  # e.g. a rename to the same name: not a valid declaration
        return None
    fields = {**d.stored(), **common}
    if d.declarative_type in COLUMN_TYPES:  # scoped to a table, or to none
        fields["table"] = draw(st.sampled_from(TABLES))
    return Declarative(**fields)


@st.composite
def step_lists(draw: Any) -> list[dict[str, Any]]:
    kinds = draw(
        st.lists(
            st.sampled_from(
                [
                    "KEEP COLUMNS",
                    "DELETE COLUMN",
                    "RENAME COLUMN",
                    "ADD COLUMN",
                    "RENAME TABLE",
                    "RENAME SCHEMA",
                ]
            ),
            max_size=5,
        )
    )
    out = []
    for kind in kinds:
        d = _build(kind, draw)
        if d is not None:
            out.append(d.stored() | {"table": d.table})  # as jobs/spark_submit._rules carries it
    return out


# --- the reference and the comparison --------------------------------------------------------


def reference(text: str, steps: list[dict[str, Any]]) -> str | None:
    """What jobs/spark/transforms.transform_one stores, or None when it reports an error."""
    try:
        msg = message_from_queue("ROW_LCR", None, json.loads(text))
        spec = RuleTransforms(declarative=tuple(Declarative(**d) for d in steps))
        out, _steps = run_transformations(msg, spec)
        _kind, _type, payload = message_content(out, type_name=None)
        return json.dumps(payload)
    except Exception:  # transform_one turns every failure into an error status
        return None


def exact(text: str) -> Any:
    """JSON with every number exact (jsonb compares numbers as numeric)."""
    return json.loads(text, parse_float=Decimal)


def plain(value: Any, *, top: bool = True) -> bool:
    """A value the expressions must render themselves (no fallback): text, null, integers,
    top-level booleans, top-level non-integers of at most 15 digits in a moderate range."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, bool):
        return top
    if isinstance(value, int):
        return len(str(abs(value))) <= 126  # Oracle NUMBER range: beyond, the Python path
    if isinstance(value, float):
        digits = Decimal(repr(value)).normalize().as_tuple().digits
        return top and (value == 0 or 1e-5 <= abs(value) < 1e15) and len(digits) <= 15
    if isinstance(value, list):
        return all(plain(v, top=False) for v in value)
    return all(plain(v, top=False) for v in value.values())


def out_of_range(value: Any) -> bool:
    from rules.lang.values import number_in_range

    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return not number_in_range(Decimal(repr(value) if isinstance(value, float) else value))


def plain_payload(p: Any) -> bool:
    return all(
        plain(v) for lst in ("old_values", "new_values") for v in (p.get(lst) or {}).values()
    )


def as_jsonb(conn: Any, texts: list[str]) -> list[str]:
    rows = conn.execute(
        "SELECT t::jsonb::text FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i",
        (texts,),
    ).fetchall()
    return [r[0] for r in rows]


def run_spark(session: Any, texts: list[str], steps: list[dict[str, Any]]) -> list[str | None]:
    from pyspark.sql import functions as F

    col = declarative_column(F.col("payload"), steps, table=None)
    assert col is not None
    df = session.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, payload string")
    rows = df.select("i", col.alias("out")).orderBy("i").collect()
    return [r["out"] for r in rows]


def check(
    session: Any, conn: Any, items: list[Any], steps: list[dict[str, Any]], *, notes: bool = False
) -> int:
    """Compare every payload; returns how many rows fell back."""
    dumped = [json.dumps(p) for p in items]
    texts = as_jsonb(conn, dumped) + dumped
    originals = items + items
    got = run_spark(session, texts, steps)
    fallbacks = 0
    for p, text, out in zip(originals, texts, got, strict=True):
        want = reference(text, steps)
        if notes:  # only inside a hypothesis example
            note(f"payload {text}\n  spark {out}\n  python {want}")
        if out is None:
            fallbacks += 1
            ok = want is None or not isinstance(p, dict) or not plain_payload(p)
            assert ok, f"a plain payload fell back: {text} with {steps}"
            continue
        assert want is not None, f"the pipeline refuses {text}, the expressions passed it"
        assert exact(out) == exact(want), (text, steps)
    return fallbacks


# Derandomized: CI runs the examples this was checked with; a random seed per run found two real
# differences (numbers outside Oracle's range) in longer runs, fixed and kept as tests below.
@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    steps=step_lists(),
    items=st.lists(st.one_of(payloads, payloads, payloads, bad_payloads), min_size=1, max_size=12),
)
def test_expressions_write_what_the_pipeline_writes(spark, rules_pg, steps, items) -> None:
    if supported_steps(steps) is None:
        # Only an ADD of a number outside Oracle's range is left to Python whole (the pipeline
        # may write it NULL once a later step reads the LCR again).
        assert any(out_of_range(d.get("column_value")) for d in steps), steps
        return
    rendered = len(items) * 2 - check(spark, rules_pg, items, steps, notes=True)
    event(f"rows rendered by expressions: {'some' if rendered else 'none'}")


# --- the common cases are supported, and right -----------------------------------------------

ROW = {
    "source_database_name": "DB1",
    "command_type": "UPDATE",
    "object_owner": "HR",
    "object_name": "EMP",
    "tag": "0a",
    "old_values": {"ID": 7, "NAME": "Ann", "SALARY": 12.5, "BIG": 10**40, "Mixed": None},
    "new_values": {"ID": 7, "NAME": "Bo", "SALARY": 13.75, "BIG": -(10**40), "N": {"a": [1]}},
}

COMMON = {
    "rename column": [
        declarative("RENAME COLUMN", from_column_name="name", to_column_name="ENAME")
    ],
    "delete column": [declarative("DELETE COLUMN", column_name="salary")],
    "keep columns": [declarative("KEEP COLUMNS", column_list=["id", "name"], value_type="OLD")],
    "add a number": [
        declarative("ADD COLUMN", column_name="dept", column_value=10, value_type="*")
    ],
    "add a big number": [declarative("ADD COLUMN", column_name="dept", column_value=10**30)],
    "add a fraction": [declarative("ADD COLUMN", column_name="rate", column_value=0.1 + 0.2)],
    "add a string": [declarative("ADD COLUMN", column_name="src", column_value="bulk")],
    "rename table": [declarative("RENAME TABLE", from_table_name="hr.emp", to_table_name="x.e")],
    "rename schema": [declarative("RENAME SCHEMA", from_schema_name="hr", to_schema_name="h2")],
    "all six, scoped": [
        declarative("KEEP COLUMNS", column_list="id,name,salary,big", table="HR.EMP"),
        declarative("DELETE COLUMN", column_name="big", table="HR.EMP"),
        declarative(
            "RENAME COLUMN", from_column_name="id", to_column_name="EMP_ID", table="HR.EMP"
        ),
        declarative("ADD COLUMN", column_name="src", column_value="x", table="SCOTT.DEPT"),
        declarative("RENAME TABLE", from_table_name="hr.emp", to_table_name="hr.staff"),
        declarative("RENAME SCHEMA", from_schema_name="hr", to_schema_name="HR2", step_number=1),
    ],
}


@pytest.mark.parametrize("case", list(COMMON))
def test_common_steps_run_as_expressions(spark, rules_pg, case) -> None:
    steps = [d.stored() | {"table": d.table} for d in COMMON[case]]
    assert supported_steps(steps) is not None
    fallbacks = check(spark, rules_pg, [ROW], steps)
    assert fallbacks == 0  # a plain row is rendered by the expressions, both as jsonb and as text
    out = run_spark(spark, [json.dumps(ROW)], steps)[0]
    assert out is not None and exact(out) != exact(json.dumps(ROW))  # the step did something


def test_numbers_keep_their_exact_value(spark, rules_pg) -> None:
    """Integers of any length stay digit for digit; a non-integer becomes what repr(float) writes
    or the row falls back; an overflowing number becomes null as json.loads makes it."""
    values = [10**40 + 1, 2**64 + 1, -(10**44), 0.5, 1e-7, 123.456, 1e22, 0.1 + 0.2, 5e-324]
    items = [{**ROW, "new_values": {"V": v}} for v in values]
    check(spark, rules_pg, items, [])
    huge = '{"command_type":"INSERT","object_owner":"HR","object_name":"EMP",' + (
        '"new_values":{"V":1e400}}'
    )
    out = run_spark(spark, [huge], [])[0]
    assert out is None or exact(out) == exact(reference(huge, []) or "null")
    assert math.isinf(json.loads("1e400"))


def test_unsupported_steps_are_left_to_python() -> None:
    ok = declarative("DELETE COLUMN", column_name="x").stored() | {"table": None}
    assert supported_steps([ok]) is not None
    assert declarative_column(None, [{**ok, "declarative_type": "DROP"}], table=None) is None
    assert declarative_column(None, [{**ok, "value_type": "BOTH"}], table=None) is None
    assert declarative_column(None, [{**ok, "column_name": None}], table=None) is None
    assert declarative_column(None, [{**ok, "unknown_field": 1}], table=None) is None


def test_numbers_outside_oracles_range_are_left_to_python(spark, rules_pg) -> None:
    """An ADD COLUMN makes the pipeline read the LCR's values again, and a number outside
    Oracle's NUMBER range comes back NULL: the expressions must not write it as it was (found by
    the property test above, seed 45508630916792084577598840611914341726)."""
    add = declarative("ADD COLUMN", column_name="id", column_value=None, value_type="NEW")
    steps = [add.stored() | {"table": None}]
    items = [
        {
            "command_type": "INSERT",
            "object_owner": "HR",
            "object_name": "EMP",
            "old_values": {"ID": v},
        }
        for v in (2.5e-300, 1e200, 10**130, 2.5e-100)
    ]
    assert check(spark, rules_pg, items, steps) >= 6  # the three out of range, both text forms
