"""The message rows of ``compile_spark`` built for a whole batch at once with pyarrow.

``compile_spark.message_row(message_from_queue(kind, type_name, payload))`` costs about 100 µs a
row in Python, which is the whole cost of evaluating rules in Spark. ``arrow_rows`` builds the same
rows for a batch of queue messages from their JSON text with ``pyarrow.json.read_json`` and
``pyarrow.compute``, filling only what the conditions read:

- ``kind`` and ``type_name`` for every row (every condition tests them);
- for user messages whose payload is an object, the ``attrs`` entries of the referenced attribute
  paths (and of their parents) and the ``names`` entries that resolve them, for values read as
  ``int64`` (V computed with pyarrow), strings and booleans (V computed once per distinct value
  with ``compile_spark``'s own Python, then taken), objects and lists (V of family O), and nulls
  (no entry: a NULL attribute and an absent one read the same through ``names``/``attrs``).

Everything else takes ``message_row`` for that row, so the rows always decide exactly as
``message_row``'s: change records when a condition reads their fields, non-object payloads when a
condition reads a bare user variable, values Arrow reads as double (JSON floats, integers beyond
int64, which it would round) or timestamp (it parses date-like strings), payload texts holding a
newline or a surrogate escape, a row where two keys differ only in case and which of them
``values.Struct`` picks depends on key order or on NULL versus absent, and the rows of any slice
``read_json`` refuses (a key whose type changes between rows: the batch is split at the row it
names, or in halves, down to a few rows).

A batch's map entries are a subset of ``message_row``'s (the referenced ones), which is all that
``compile_spark``'s Columns look up; the paths and ``names`` keys are built with
``compile_spark``'s own ``_path`` and separators. Payloads are the JSON text of
``aq_message.payload`` (jsonb output: valid JSON, no duplicate keys, no raw newlines); a
non-object payload is not parsed unless a condition reads it.

pyspark is not imported: the executors' Python data source reader yields these batches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from rules.lang import values as v
from rules.lang.ast import Attr, Bind, Call, Compare, Condition, InList, IsNull, Like, walk
from rules.lang.compile_spark import (
    _NAMES,
    LCR_COLUMNS,
    V_FIELDS,
    _path,
    _value_row,
    message_row,
    number_key,
)

__all__ = ["Needs", "arrow_rows", "arrow_schema", "referenced_paths", "stats"]

Path = tuple[tuple[str, bool], ...]  # (name, quoted) steps from a user variable


@dataclass(frozen=True, slots=True)
class Needs:
    """What conditions read of a message beyond ``kind`` and ``type_name``."""

    paths: frozenset[Path] = frozenset()  # attribute chains (every prefix is a chain too)
    scalar: bool = False  # a bare user variable is read as a value (``scalar``)
    lcr: bool = False  # a change record's fields, tag or column values are read

    @property
    def empty(self) -> bool:
        """True when nothing of the payload is read."""
        return not (self.paths or self.scalar or self.lcr)

    @property
    def names(self) -> bool:
        """True when some step is a case-insensitive (unquoted) name, resolved by ``names``."""
        return any(not quoted for p in self.paths for _, quoted in p)


def referenced_paths(conditions: Iterable[Condition]) -> Needs:
    """What the conditions read of a message. Conservative: every variable counts, whatever it
    is bound to, since reading more than ``compile_spark`` looks up never changes a decision."""
    paths: set[Path] = set()
    scalar = lcr = False
    for cond in conditions:
        for node in walk(cond):
            if isinstance(node, Attr):
                chain = _chain(node)
                if chain is not None:
                    paths.add(chain)
            elif isinstance(node, Call) and isinstance(node.expr, Bind):
                lcr = True  # GET_VALUE, GET_TAG, IS_NULL_TAG, GET_OBJECT_OWNER...
            if not isinstance(node, IsNull | Attr):  # IS NULL of a variable reads only its kind
                args = node.args if isinstance(node, Call) else _operands(node)
                scalar = scalar or any(isinstance(a, Bind) for a in args)
    return Needs(frozenset(paths), scalar, lcr)


def _operands(node: Any) -> tuple[Any, ...]:
    match node:
        case Compare(left=a, right=b):
            return (a, b)
        case InList(expr=e, items=items):
            return (e, *items)
        case Like(expr=e, pattern=p, escape=esc):
            return (e, p, esc)
    return ()


def _chain(node: Attr) -> Path | None:
    steps: list[tuple[str, bool]] = []
    e: Any = node
    while isinstance(e, Attr):
        steps.append((e.name, e.quoted))
        e = e.expr
    return tuple(reversed(steps)) if isinstance(e, Bind) else None


# --- the Arrow schema ----------------------------------------------------------------------------

_STR, _BIN = pa.string(), pa.binary()
V_TYPE = pa.struct(
    [
        pa.field(n, t)
        for n, t in zip(V_FIELDS, (_STR, _STR, _BIN, _BIN, _STR, _BIN, _STR), strict=True)
    ]
)
_V_MAP = pa.map_(_STR, V_TYPE)
_NAMES_MAP = pa.map_(_STR, _STR)
_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("kind", _STR, nullable=False),
        pa.field("type_name", _STR),
        *(pa.field(c, _STR) for c in LCR_COLUMNS),
        pa.field("tag", _BIN),
        pa.field("old_values", _V_MAP),
        pa.field("new_values", _V_MAP),
        pa.field("scalar", V_TYPE),
        pa.field("attrs", _V_MAP),
        pa.field("names", _NAMES_MAP),
    ]
)


def arrow_schema() -> pa.Schema:
    """``id`` (int64) followed by the columns of ``compile_spark.spark_schema()`` as Arrow types."""
    return _SCHEMA


# --- counters (the tests check that the fast path is taken) --------------------------------------


@dataclass(slots=True)
class Stats:
    rows: int = 0  # rows built
    fallback: int = 0  # of which by message_row
    reads: int = 0  # read_json calls (more than batches when a batch is split)

    def reset(self) -> None:
        self.rows = self.fallback = self.reads = 0


stats = Stats()


# --- values --------------------------------------------------------------------------------------

_O_ROW = ("O", None, None, None, None, None, None)
_MEMO: dict[Any, tuple[Any, ...]] = {}  # V of strings and booleans seen in earlier batches
_MEMO_MAX = 1 << 16
_SMALL = 8  # a slice read_json refuses that is this short is built row by row

# number_key of an integer of d digits is a prefix that depends on d and the sign, then its
# digits without trailing zeros (complemented and terminated when negative): take the prefixes
# from number_key itself.
_POS_PREFIX = pa.array([b""] + [number_key(10 ** (d - 1))[:-1] for d in range(1, 21)], _BIN)
_NEG_PREFIX = pa.array([b""] + [number_key(-(10 ** (d - 1)))[:-2] for d in range(1, 21)], _BIN)
_ZERO_KEY = number_key(0)
_NEG_END = number_key(-1)[-1:]


def _v_struct(children: list[pa.Array]) -> pa.StructArray:
    return pa.StructArray.from_arrays(children, fields=list(V_TYPE))


def _int_values(x: pa.Array) -> pa.StructArray:
    """V of JSON integers read as int64 (no nulls), without Python per value."""
    t = pc.cast(x, _STR)
    digits = pc.utf8_ltrim(t, characters="-")
    nd = pc.utf8_length(digits)
    body = pc.cast(pc.utf8_rtrim(digits, characters="0"), _BIN)
    key = pc.binary_join_element_wise(pc.take(_POS_PREFIX, nd), body, b"")
    neg = pc.less(x, 0)
    if pc.any(neg).as_py():
        # each digit d becomes the byte 0x39 - d, i.e. the digit 9 - d: through letters first,
        # so that a digit already replaced is not replaced again
        comp = pc.utf8_rtrim(digits, characters="0")
        for d in range(10):
            comp = pc.replace_substring(comp, str(d), chr(ord("a") + 9 - d))
        for d in range(10):
            comp = pc.replace_substring(comp, chr(ord("a") + d), str(d))
        nkey = pc.binary_join_element_wise(
            pc.take(_NEG_PREFIX, nd), pc.cast(comp, _BIN), pa.scalar(_NEG_END, _BIN), b""
        )
        key = pc.if_else(neg, nkey, key)
    key = pc.if_else(pc.equal(x, 0), pa.scalar(_ZERO_KEY, _BIN), key)
    n = len(x)
    fam = pa.repeat(pa.scalar("N", _STR), n)
    return _v_struct([fam, t, key, key, t, pa.nulls(n, _BIN), pa.nulls(n, _STR)])


def _python_values(x: pa.Array) -> pa.StructArray:
    """V of strings or booleans (no nulls): ``_value_row`` once per distinct value."""
    enc = pc.dictionary_encode(x)
    rows = []
    for item in enc.dictionary.to_pylist():
        row = _MEMO.get((type(item), item))
        if row is None:
            row = _value_row(v.from_json_value(item))
            if len(_MEMO) >= _MEMO_MAX:
                _MEMO.clear()
            _MEMO[(type(item), item)] = row
        rows.append(row)
    dict_v = pa.array(rows, V_TYPE) if rows else pa.array([], V_TYPE)
    return dict_v.take(enc.indices)


def _const_values(n: int, row: tuple[Any, ...]) -> pa.StructArray:
    return pa.repeat(pa.scalar(row, V_TYPE), n)


def _values_of(col: pa.Array, sel: pa.Array, count: int) -> pa.StructArray | None:
    """V of a column's values in the selected rows (none NULL), or None when Arrow's reading of
    them is not exact."""
    t = col.type
    if pa.types.is_struct(t) or pa.types.is_list(t):  # family O whatever they hold: no copy
        return _const_values(count, _O_ROW)
    if pa.types.is_int64(t):
        return _int_values(col.filter(sel))
    if pa.types.is_string(t) or pa.types.is_boolean(t):
        return _python_values(col.filter(sel))
    return None  # double (floats, huge integers), timestamp (date-like strings), ...


# --- reading the payloads ------------------------------------------------------------------------

_ROW_ERROR = re.compile(r" in row (\d+)")


def _read(texts: pa.Array) -> pa.Table:
    """The object payloads as one table; raises _Refused (with the row read_json names, if any)
    when it refuses them or does not read one row per payload (``{..}{..}`` is two rows to it)."""
    stats.reads += 1
    lines = pc.binary_join_element_wise(texts, "\n", "")
    _, offsets, data = lines.buffers()
    bounds = pa.Array.from_buffers(pa.int32(), len(lines) + 1, [None, offsets], offset=lines.offset)
    start, end = bounds[0].as_py(), bounds[-1].as_py()
    buf = data.slice(start, end - start)
    try:
        table = pj.read_json(pa.BufferReader(buf))
        # read_json can build invalid arrays (a list holding null then an object of nulls
        # gets list offsets past its values): refuse them as it refuses bad input.
        table.validate()
    except pa.ArrowException as exc:
        m = _ROW_ERROR.search(str(exc))
        raise _Refused(int(m.group(1)) if m else 0) from None
    if table.num_rows != len(texts):
        raise _Refused(0)
    return table


class _Refused(Exception):
    def __init__(self, row: int) -> None:
        self.row = row


def _read_pieces(
    texts: pa.Array, rows: pa.Array
) -> tuple[list[tuple[pa.Table, pa.Array]], list[pa.Array]]:
    """Tables of slices of the payloads with their global row numbers, and the row numbers of
    the slices read_json refused down to ``_SMALL`` rows."""
    pieces, refused = [], []
    todo = [(0, len(texts))]
    while todo:
        lo, hi = todo.pop()
        try:
            table = _read(texts.slice(lo, hi - lo))
        except _Refused as exc:
            if hi - lo <= _SMALL:
                refused.append(rows.slice(lo, hi - lo))
                continue
            cut = lo + exc.row if 0 < exc.row < hi - lo else (lo + hi) // 2
            todo += [(cut, hi), (lo, cut)]
            continue
        pieces.append((table, rows.slice(lo, hi - lo)))
    return pieces, refused


# --- entries of the maps -------------------------------------------------------------------------


Trie = dict[tuple[str, bool], "Trie"]


def _trie(paths: Iterable[Path]) -> Trie:
    root: Trie = {}
    for p in paths:
        node = root
        for step in p:
            node = node.setdefault(step, {})
    return root


@dataclass
class _Entries:
    """Map entries in long form: global row, key, value; and rows for message_row."""

    attr_rows: list[pa.Array] = field(default_factory=list)
    attr_keys: list[pa.Array] = field(default_factory=list)
    attr_values: list[pa.Array] = field(default_factory=list)
    name_rows: list[pa.Array] = field(default_factory=list)
    name_keys: list[pa.Array] = field(default_factory=list)
    name_values: list[pa.Array] = field(default_factory=list)
    fallback: list[pa.Array] = field(default_factory=list)


def _fields(arr: pa.StructArray | pa.Table) -> dict[str, pa.Array]:
    if isinstance(arr, pa.Table):
        return {name: _one_chunk(arr.column(i)) for i, name in enumerate(arr.column_names)}
    return {arr.type.field(i).name: arr.field(i) for i in range(arr.type.num_fields)}


def _one_chunk(col: pa.ChunkedArray) -> pa.Array:
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _walk(
    fields: dict[str, pa.Array],
    parent: str,
    node: Trie,
    mask: pa.Array,
    rows: pa.Array,
    out: _Entries,
) -> None:
    """The entries under one object: ``mask`` says in which rows it is an object at ``parent``."""
    valid = {}

    def valid_of(f: str) -> pa.Array:
        if f not in valid:
            valid[f] = pc.and_(mask, fields[f].is_valid())
        return valid[f]

    below: dict[str, Trie] = {}  # each matched key, with what is read below it
    for (name, quoted), child in node.items():
        if quoted:
            matches = [name] if name in fields else []
        elif name != name.upper():  # compile_spark resolves only upper-cased names
            continue
        else:
            matches = [f for f in fields if f.upper() == name]
        for f in matches:
            merged = below.setdefault(f, {})
            for k, sub in child.items():  # union of the tries of all the steps reaching f
                merged[k] = _merge(merged.get(k, {}), sub)
        if quoted or not matches:
            continue
        key = parent + _NAMES + name
        if len(matches) == 1:
            chosen, ambiguous = matches[0], None
        elif name in matches:  # values.Struct prefers the key already in upper case
            others = [valid_of(f) for f in matches if f != name]
            chosen = name
            ambiguous = pc.and_(pc.invert(valid_of(name)), _any(others))
        else:  # the first in key order wins, and a NULL one too: order is lost here
            chosen, ambiguous = None, _any([valid_of(f) for f in matches])
        if ambiguous is not None:
            out.fallback.append(rows.filter(ambiguous))
        if chosen is not None:
            sel = valid_of(chosen)
            count = pc.sum(sel).as_py() or 0
            if count:
                out.name_rows.append(rows.filter(sel))
                out.name_keys.append(pa.repeat(pa.scalar(key, _STR), count))
                out.name_values.append(pa.repeat(pa.scalar(_path(parent, chosen), _STR), count))
    for f, child in below.items():
        col, sel = fields[f], valid_of(f)
        count = pc.sum(sel).as_py() or 0
        if not count:
            continue
        vals = _values_of(col, sel, count)
        if vals is None:
            out.fallback.append(rows.filter(sel))
            continue
        path = _path(parent, f)
        out.attr_rows.append(rows.filter(sel))
        out.attr_keys.append(pa.repeat(pa.scalar(path, _STR), count))
        out.attr_values.append(vals)
        if child and pa.types.is_struct(col.type):
            _walk(_fields(col), path, child, sel, rows, out)


def _merge(a: Trie, b: Trie) -> Trie:
    out = dict(a)
    for k, sub in b.items():
        out[k] = _merge(out.get(k, {}), sub)
    return out


def _any(masks: list[pa.Array]) -> pa.Array:
    acc = masks[0]
    for m in masks[1:]:
        acc = pc.or_(acc, m)
    return acc


def _map_array(
    n: int,
    rows: list[pa.Array],
    keys: list[pa.Array],
    items: list[pa.Array],
    typ: pa.DataType,
    present: pa.Array,
) -> pa.Array:
    """A map per row from entries in long form; NULL where ``present`` is false."""
    item_type = typ.item_type
    if rows:
        r = pa.concat_arrays(rows)
        order = pc.sort_indices(r)
        r = r.take(order)
        k = pa.concat_arrays(keys).take(order)
        it = pa.concat_arrays(items).take(order)
    else:
        r, k, it = pa.array([], pa.int64()), pa.array([], _STR), pa.array([], item_type)
    bounds = pc.search_sorted(r, _arange(n + 1))
    offsets = pc.cast(bounds, pa.int32())
    return pa.MapArray.from_arrays(offsets, k, it, type=typ, mask=pc.invert(present))


def _arange(n: int) -> pa.Array:
    return pa.array(range(n), pa.int64())


# --- rows ----------------------------------------------------------------------------------------


def _one(arr: pa.Array | pa.ChunkedArray | None, typ: pa.DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr, pa.DictionaryArray):
        arr = arr.dictionary_decode()
    return arr if arr.type == typ else pc.cast(arr, typ)


def _fallback_row(kind: str | None, type_name: str | None, payload: str | None) -> tuple:
    body = None if payload is None else json.loads(payload)
    return message_row(v.message_from_queue(kind, type_name, body))  # type: ignore[arg-type]


def _rows_batch(ids: list[int], rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """message_row tuples as a batch of ``arrow_schema()``."""
    cols = [pa.array(ids, pa.int64())]
    for i, f in enumerate(list(_SCHEMA)[1:]):
        cols.append(pa.array([r[i] for r in rows], f.type))
    return pa.RecordBatch.from_arrays(cols, schema=_SCHEMA)


def arrow_rows(
    ids: pa.Array,
    kinds: pa.Array,
    type_names: pa.Array,
    payloads: pa.Array | None,
    needs: Needs,
) -> pa.RecordBatch:
    """One batch of ``arrow_schema()``: ``id`` passed through, then the row of each message as
    ``message_row(message_from_queue(kind, type_name, json.loads(payload)))`` would build it,
    restricted to what ``needs`` says the conditions read (see the module docstring).

    ``payloads`` is the JSON text of each payload and may be None when ``needs.empty``. Raises
    what ``message_from_queue`` or ``json.loads`` raise for a row they refuse and that is read."""
    ids = _one(ids, pa.int64())
    n = len(ids)
    kinds, type_names = _one(kinds, _STR), _one(type_names, _STR)
    if payloads is None and not needs.empty:
        raise ValueError("the conditions read the payloads: pass them")
    texts = None if payloads is None else _one(payloads, _STR)

    # kind as message_from_queue reads it (Python's upper, once per distinct spelling)
    enc = pc.dictionary_encode(kinds)
    spellings = enc.dictionary.to_pylist()
    upper = [(k or "").upper() for k in spellings]
    bad = [i for i, k in enumerate(upper) if k not in ("USER", "ROW_LCR", "DDL_LCR")]
    if bad or kinds.null_count:
        row = pc.index(enc.indices, bad[0]).as_py() if bad else kinds.is_null().index(True).as_py()
        _fallback_row(kinds[row].as_py(), type_names[row].as_py(), _text(texts, row))
        raise AssertionError("message_from_queue accepted an unknown kind")  # pragma: no cover
    kind = pa.array(upper, _STR).take(enc.indices)
    user = pc.equal(kind, "USER")
    lcr = pc.invert(user)
    type_name = pc.if_else(user, pc.fill_null(type_names, ""), pa.scalar(None, _STR))

    out = _Entries()
    if needs.lcr:
        out.fallback.append(_arange(n).filter(lcr))
    if needs.paths or needs.scalar:
        assert texts is not None
        present = pc.and_(user, texts.is_valid())  # a NULL payload reads as JSON null
        obj = pc.and_(present, pc.starts_with(texts, "{"))
        plain = pc.and_(
            obj,
            pc.invert(
                pc.or_(
                    pc.match_substring_regex(texts, r"[\n\r]"),
                    pc.match_substring_regex(texts, r"\\u[dD][89a-fA-F]"),
                )
            ),
        )
        plain = pc.fill_null(plain, False)
        odd = pc.and_(present, pc.invert(plain))
        if not needs.scalar:  # a JSON scalar or list: nothing to read but its kind
            scalar_start = pc.match_substring_regex(texts, r'^[\["tfn0-9-]')
            odd = pc.and_(odd, pc.invert(pc.fill_null(scalar_start, False)))
        odd = pc.fill_null(odd, False)
        out.fallback.append(_arange(n).filter(odd))
        if needs.paths and pc.any(plain).as_py():
            rows = _arange(n).filter(plain)
            pieces, refused = _read_pieces(texts.filter(plain), rows)
            out.fallback += refused
            trie = _trie(needs.paths)
            for table, prow in pieces:
                everywhere = pa.repeat(pa.scalar(True), table.num_rows)
                _walk(_fields(table), "", trie, everywhere, prow, out)

    attrs = _map_array(n, out.attr_rows, out.attr_keys, out.attr_values, _V_MAP, user)
    names = _map_array(n, out.name_rows, out.name_keys, out.name_values, _NAMES_MAP, user)
    none_str, none_v = pa.nulls(n, _STR), pa.nulls(n, V_TYPE)
    cols = [
        ids,
        kind,
        type_name,
        *([none_str] * len(LCR_COLUMNS)),
        pa.nulls(n, _BIN),
        pa.nulls(n, _V_MAP),
        pa.nulls(n, _V_MAP),
        none_v,
        attrs,
        names,
    ]
    batch = pa.RecordBatch.from_arrays(cols, schema=_SCHEMA)

    back = pc.unique(pa.concat_arrays(out.fallback)) if out.fallback else pa.array([], pa.int64())
    stats.rows += n
    stats.fallback += len(back)
    if not len(back):
        return batch
    back = back.sort()
    idx = back.to_pylist()
    built = [_fallback_row(kinds[i].as_py(), type_names[i].as_py(), _text(texts, i)) for i in idx]
    slow = _rows_batch(ids.take(back).to_pylist(), built)
    # Row i comes from the slow batch when it fell back, else from the fast one.
    is_slow = pc.is_in(_arange(n), value_set=back)
    rank = pc.subtract(pc.cumulative_sum(pc.cast(is_slow, pa.int64())), 1)
    take = pc.if_else(is_slow, pc.add(rank, n), _arange(n))
    both = pa.Table.from_batches([batch, slow]).combine_chunks()
    return both.take(take).combine_chunks().to_batches()[0]


def _text(texts: pa.Array | None, i: int) -> str | None:
    return None if texts is None else texts[i].as_py()
