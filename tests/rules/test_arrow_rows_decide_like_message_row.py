"""``arrow_rows`` builds, for a batch of queue messages, rows on which every condition decides
exactly as on ``message_row``'s rows (and as ``compile_python`` on the message), and takes its
vectorised path for the common payloads: objects whose attributes are integers and strings.

Batches are drawn so that a key keeps one JSON type across rows most of the time (what Arrow reads
without help), with edge integers, numeric, date and hex looking strings, nested objects, keys
that differ only in case, nulls, lists, floats, non-object payloads and change records mixed in.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from rules.lang import Compare, InList, IsNull, Like, message_from_queue, parse
from rules.lang.arrow_rows import Needs, arrow_rows, arrow_schema, referenced_paths, stats
from rules.lang.compile_spark import _NAMES, V_FIELDS, _path, compile_spark, message_row
from tests.rules.lang_strategies import _conditions as compound
from tests.rules.strategies import (
    USER_TYPES,
    attributes,
    conditions,
    constants,
    json_numbers,
    json_values,
    operators,
    patterns,
    python_values,
    queue_rows,
    strings,
    usable,
)

_SETTINGS = dict(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure lists every mismatch
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

# --- batches of payloads -------------------------------------------------------------------------

EDGE_INTS = [0, 1, -1, 2, 10, 100, -100, 120, 2**53 + 1, 10**18, -(10**18), 2**63 - 1]
EDGE_INTS += [-(2**63 - 1), -(2**63)]
ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-(2**63), 2**63 - 1))
huge_ints = st.one_of(ints, st.sampled_from([2**63, -(2**63) - 1, 10**20, -(10**40)]))
TOP_KEYS = ["region", "REGION", "Region", "priority", "PRIORITY", "x", "a b", "\u0131d", "ID"]
TOP_KEYS += ["ss", "ß", "A", "a", "X"]
INNER_KEYS = ["a", "A", "B", "region"]

scalar_kinds = {"int": ints, "str": strings, "bool": st.booleans()}


def _objects(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.dictionaries(st.sampled_from(INNER_KEYS), st.one_of(st.none(), inner), max_size=3)


LEAF_KINDS = ["int", "int", "int", "str", "str", "str", "bool", "obj", "obj", "list", "float"]
LEAF_KINDS += ["huge", "any", "null"]
leaf_kinds = st.sampled_from(LEAF_KINDS)


def _leaf(draw, kind: str) -> st.SearchStrategy:
    match kind:
        case "obj":  # one type per inner key too, most of the time
            return _objects(scalar_kinds[draw(st.sampled_from(["int", "str", "bool"]))])
        case "list":
            return st.lists(ints, max_size=2)
        case "float":
            return json_numbers
        case "huge":
            return huge_ints
        case "any":
            return json_values
        case "null":
            return st.none()
    return scalar_kinds[kind]


@st.composite
def batches(draw) -> list[tuple[str, str, Any]]:
    """Queue rows ``(kind, type_name, payload)``, mostly user objects sharing typed keys."""
    keys = draw(st.lists(st.sampled_from(TOP_KEYS), min_size=1, max_size=4, unique=True))
    leaves = {k: st.one_of(st.none(), _leaf(draw, draw(leaf_kinds))) for k in keys}
    rows: list[tuple[str, str, Any]] = []
    for _ in range(draw(st.integers(1, 24))):
        if draw(st.integers(0, 9)) == 0:  # a change record, a scalar or list, any object
            rows.append(draw(queue_rows))
            continue
        payload = {k: draw(leaves[k]) for k in draw(st.permutations(keys)) if draw(st.booleans())}
        rows.append(("USER", draw(st.sampled_from(USER_TYPES)), payload))
    return rows


_attr_leaves = st.one_of(
    st.builds(Compare, operators, attributes(), constants),
    st.builds(Compare, operators, constants, attributes()),
    st.builds(Compare, operators, attributes(), attributes()),
    st.builds(IsNull, attributes(), st.booleans()),
    st.builds(InList, attributes(), st.lists(constants, min_size=1, max_size=3).map(tuple)),
    st.builds(Like, attributes(), patterns, st.booleans()),
)
attr_conditions = st.recursive(_attr_leaves, compound, max_leaves=4)


def condition_list(size: int):
    trees = st.one_of(attr_conditions, attr_conditions, conditions)
    return st.lists(trees, min_size=size, max_size=size).map(
        lambda ts: [c for c in map(usable, ts) if c is not None]
    )


# --- building both kinds of rows -----------------------------------------------------------------


def _texts(rows, ascii_only: bool) -> list[str]:
    return [json.dumps(p, ensure_ascii=ascii_only) for _, _, p in rows]


def _arrow(rows, texts, needs: Needs) -> pa.RecordBatch:
    n = len(rows)
    return arrow_rows(
        pa.array(range(n), pa.int64()),
        pa.array([k for k, _, _ in rows], pa.string()),
        pa.array([t for _, t, _ in rows], pa.string()),
        pa.array(texts, pa.string()),
        needs,
    )


def _message(row, text):
    kind, type_name, _ = row
    return message_from_queue(kind, type_name, json.loads(text))


def _as_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(arrow_schema().names[1:], row, strict=True))


def _v(x: Any) -> Any:
    return None if x is None else tuple(x[f] for f in V_FIELDS)


def _like_message_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row of the batch (maps as lists of pairs, structs as dicts) as message_row builds it."""
    out = dict(row)
    del out["id"]
    for col in ("old_values", "new_values", "attrs"):
        if out[col] is not None:
            out[col] = {k: _v(x) for k, x in out[col]}
    out["names"] = None if out["names"] is None else dict(out["names"])
    out["scalar"] = _v(out["scalar"])
    return out


def _resolve(attrs: dict, names: dict, chain) -> Any:
    """What compile_spark's ``path`` and ``element_at(attrs, path)`` read for an attribute."""
    path = ""
    for name, quoted in chain:
        if quoted:
            path = path + _path("", name)
        elif name != name.upper():
            return None
        else:
            path = names.get(path + _NAMES + name)
            if path is None:
                return None
    return attrs.get(path)


def _row_differences(fast: dict, slow: dict, needs: Needs) -> list[str]:
    out = []
    for col in ("kind", "type_name"):
        if fast[col] != slow[col]:
            out.append(f"{col}: {fast[col]!r} != {slow[col]!r}")
    if slow["kind"] != "USER":
        if needs.lcr and _like_message_row(fast) != slow:
            out.append(f"change record fields differ: {_like_message_row(fast)} != {slow}")
        return out
    fa = {k: _v(x) for k, x in fast["attrs"]}
    fn = dict(fast["names"])
    sa, sn = slow["attrs"], slow["names"]
    out += [f"attrs[{k!r}] = {x} not {sa.get(k)}" for k, x in fa.items() if sa.get(k) != x]
    out += [f"names[{k!r}] = {x!r} not {sn.get(k)!r}" for k, x in fn.items() if sn.get(k) != x]
    for chain in needs.paths:
        got, want = _resolve(fa, fn, chain), _resolve(sa, sn, chain)
        if got != want:
            out.append(f"{chain}: {got} != {want}")
    if needs.scalar and _v(fast["scalar"]) != slow["scalar"]:
        out.append(f"scalar: {fast['scalar']} != {slow['scalar']}")
    return out


# --- the rows hold message_row's entries (no Spark) ----------------------------------------------


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=300, **_SETTINGS)
@given(rows=batches(), conds=condition_list(6), ascii_only=st.booleans())
def test_arrow_rows_hold_the_entries_of_message_row_that_conditions_read(
    rows, conds, ascii_only
) -> None:
    needs = referenced_paths(conds)
    texts = _texts(rows, ascii_only)
    before = stats.fallback
    batch = _arrow(rows, texts, needs)
    event(f"rows by message_row: {'some' if stats.fallback > before else 'none'}")
    assert batch.schema == arrow_schema()
    assert batch.column("id").to_pylist() == list(range(len(rows)))
    bad = []
    for fast, row, text in zip(batch.to_pylist(), rows, texts, strict=True):
        slow = _as_dict(message_row(_message(row, text)))
        for d in _row_differences(fast, slow, needs):
            bad.append(f"{text}: {d}")
    assert not bad, "\n".join(bad[:10])


# --- the conditions decide alike (Spark) ---------------------------------------------------------


def _schema():
    from pyspark.sql.types import LongType, StructField, StructType

    from rules.lang.compile_spark import spark_schema

    return StructType([StructField("id", LongType(), nullable=False), *spark_schema().fields])


def _decisions(spark, conds, batch: pa.RecordBatch, messages) -> tuple[list, list]:
    """``[condition][row]`` on arrow_rows' rows and on message_row's, in one Spark job."""
    n = len(messages)
    fast = spark.createDataFrame(pa.Table.from_batches([batch]))
    slow = spark.createDataFrame(
        [(n + i, *message_row(m)) for i, m in enumerate(messages)], _schema()
    )
    cols = [compile_spark(c).alias(f"c{i}") for i, c in enumerate(conds)]
    got = {r["id"]: r for r in fast.unionByName(slow).select("id", *cols).collect()}
    on_fast = [[got[j][f"c{i}"] for j in range(n)] for i in range(len(conds))]
    on_slow = [[got[n + j][f"c{i}"] for j in range(n)] for i in range(len(conds))]
    return on_fast, on_slow


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=20, **_SETTINGS)
@given(rows=batches(), conds=condition_list(12), ascii_only=st.booleans())
def test_conditions_decide_alike_on_arrow_rows_message_rows_and_python(
    spark, rows, conds, ascii_only
) -> None:
    if not conds:
        return
    texts = _texts(rows, ascii_only)
    messages = [_message(r, t) for r, t in zip(rows, texts, strict=True)]
    batch = _arrow(rows, texts, referenced_paths(conds))
    on_fast, on_slow = _decisions(spark, conds, batch, messages)
    python = python_values(conds, messages)
    bad = [
        f"{c}\n    on {texts[j]}: arrow={on_fast[i][j]} message_row={on_slow[i][j]} "
        f"python={python[i][j]}"
        for i, c in enumerate(conds)
        for j in range(len(rows))
        if not (on_fast[i][j] is on_slow[i][j] is python[i][j])
    ]
    assert not bad, f"{len(bad)} disagreements:\n" + "\n".join(bad[:10])


@pytest.mark.spark
def test_edge_values_decide_alike_in_spark(spark) -> None:
    # Every integer against every constant and order, on the fast path: number keys must sort.
    values = [*EDGE_INTS, -5, 5, -120, 99, 101]
    texts_ = ["2", "02", " 2 ", "-1", "1e2", "2024-05-01", "0A0B", "ab", "EUROPE", ""]
    rows = [
        ("USER", "T", {"n": i, "s": texts_[k % len(texts_)], "o": {"B": i}})
        for k, i in enumerate(values)
    ]
    ops = ["=", "<", ">="]
    conds = [parse(f":msg.n {op} {c}") for op in ops for c in (-100, -1, 0, 2, 10**18, -(2**63))]
    conds += [parse(f":msg.o.b {op} -101") for op in ops]
    conds += [parse(f":msg.s {op} {c}") for op in ops for c in ("2", "'2'", "HEXTORAW('0A0B')")]
    conds += [parse(":msg.s = :msg.n"), parse(":msg.s < :msg.o.b"), parse("UPPER(:msg.s) = 'AB'")]
    texts = _texts(rows, False)
    messages = [_message(r, t) for r, t in zip(rows, texts, strict=True)]
    stats.reset()
    batch = _arrow(rows, texts, referenced_paths(conds))
    assert stats.fallback == 0
    on_fast, on_slow = _decisions(spark, conds, batch, messages)
    python = python_values(conds, messages)
    assert on_fast == on_slow == python


# --- the fast path is taken ----------------------------------------------------------------------

BENCH = {"order_id": 12345, "region": "EUROPE", "priority": 1, "customer": "ACME Corporation"}
BENCH |= {"items": [{"sku": "X-1", "qty": 3}, {"sku": "Y-2", "qty": 1}], "note": "x" * 80}


def _bench_rows(n: int) -> list[tuple[str, str, Any]]:
    return [
        ("USER", "ORDER_T", BENCH | {"priority": 1 + i % 2, "order_id": i - n // 2})
        for i in range(n)
    ]


def test_integer_and_string_attributes_take_the_fast_path() -> None:
    rows = _bench_rows(1000)
    conds = [parse(":msg.region = 'EUROPE' AND :msg.priority = 1"), parse(":msg.order_id < 0")]
    needs = referenced_paths(conds)
    stats.reset()
    batch = _arrow(rows, _texts(rows, False), needs)
    assert (stats.rows, stats.fallback, stats.reads) == (1000, 0, 1)
    got = batch.slice(3, 1).to_pylist()[0]
    assert dict(got["names"]) == {"\x1eREGION": "\x1fregion", "\x1ePRIORITY": "\x1fpriority"} | {
        "\x1eORDER_ID": "\x1forder_id"
    }
    slow = _as_dict(message_row(message_from_queue(*rows[3])))
    assert {k: _v(x) for k, x in got["attrs"]} == {
        k: slow["attrs"][k] for k in ("\x1fregion", "\x1fpriority", "\x1forder_id")
    }


def test_what_arrow_cannot_read_exactly_falls_back_row_by_row() -> None:
    rows = [
        ("USER", "T", {"priority": 1}),
        ("USER", "T", {"priority": 2.5}),  # a double column: both rows fall back
        ("USER", "T", 7),  # a scalar: the conditions do not read it
        ("USER", "T", {"region": 1, "Region": 2}),  # case variants: which one depends on order
        ("DDL_LCR", "", {"command_type": "CREATE TABLE"}),
    ]
    needs = referenced_paths([parse(":msg.priority = 1 OR :msg.region = 1")])
    stats.reset()
    _arrow(rows, _texts(rows, True), needs)
    assert stats.fallback == 3
    # A key whose type changes between rows: read_json refuses the slice, which is cut at the
    # row it names (or in halves), so runs of one type are still read by Arrow.
    rows = [("USER", "T", {"priority": i if i % 50 else "x"}) for i in range(1, 400)]
    stats.reset()
    batch = _arrow(rows, _texts(rows, True), needs)
    assert stats.reads > 1 and stats.fallback <= 7 * 8
    for i in (48, 49, 50, 398):
        fast = _like_message_row(batch.slice(i, 1).to_pylist()[0])["attrs"]
        slow = _as_dict(message_row(message_from_queue(*rows[i])))["attrs"]
        assert fast == slow


def test_needs_say_what_the_conditions_read() -> None:
    assert referenced_paths([parse(":msg IS NULL AND :dml IS NOT NULL")]).empty
    needs = referenced_paths([parse(":msg.a.\"b\" = 1 OR :dml.get_object_owner() = 'HR'")])
    assert needs.paths == {(("A", False),), (("A", False), ("b", True))}
    assert needs.lcr and not needs.scalar and needs.names
    assert referenced_paths([parse("UPPER(:msg) = 'X'")]).scalar


def test_nothing_read_needs_no_payload() -> None:
    batch = arrow_rows(
        pa.array([5, 6]), pa.array(["user", "ROW_LCR"]), pa.array([None, ""]), None, Needs()
    )
    assert batch.column("kind").to_pylist() == ["USER", "ROW_LCR"]
    assert batch.column("type_name").to_pylist() == ["", None]


def test_a_payload_read_json_refuses_raises_as_json_loads_does() -> None:
    needs = referenced_paths([parse(":msg.a = 1")])
    with pytest.raises(json.JSONDecodeError):
        arrow_rows(pa.array([1]), pa.array(["USER"]), pa.array(["T"]), pa.array(['{"a":']), needs)


@pytest.mark.spark
def test_a_python_data_source_yields_the_batches(spark) -> None:
    from tests.rules.arrow_rows_source import ArrowRowsSource

    rows = [*_bench_rows(200), ("USER", "ORDER_T", {"priority": 1.0}), ("USER", "T", "1")]
    texts = _texts(rows, False)
    cond = parse(":msg.region = 'EUROPE' AND :msg.priority = 1")
    spark.dataSource.register(ArrowRowsSource)
    df = (
        spark.read.format("arrow_rows_test")
        .option("texts", json.dumps(texts))
        .option("condition", ":msg.region = 'EUROPE' AND :msg.priority = 1")
        .load()
    )
    assert df.schema == _schema()
    got = {r["id"]: r["c"] for r in df.select("id", compile_spark(cond).alias("c")).collect()}
    messages = [_message(r, t) for r, t in zip(rows, texts, strict=True)]
    assert [got[i] for i in range(len(rows))] == python_values([cond], messages)[0]
    assert sum(got[i] is True for i in range(len(rows))) == 100
