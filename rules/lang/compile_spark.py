"""Compile a condition tree into a Spark SQL Column over message rows.

The rows have the schema of ``spark_schema()``; ``messages_to_rows`` builds them from the Python
messages (``values.RowLCR``/``DdlLCR``/``UserMessage``), so tests and Spark jobs build DataFrames
the same way. The Column returns TRUE, FALSE or NULL exactly as ``compile_python`` does.

Schema (one row per message)::

    kind                  string   ROW_LCR, DDL_LCR or USER
    type_name             string   a user message's type (NULL for change records)
    source_database_name, command_type, object_owner, object_name,
    object_type, base_table_owner, base_table_name        string   the change record's fields
    tag                   binary   NULL when the tag is NULL
    old_values, new_values map<string, V>   a row LCR's carried columns (a carried NULL is a V
                                            whose ``f`` is NULL; an absent column has no key)
    scalar                V        a user message whose payload is not an object
    attrs                 map<string, V>      every value of a user payload, by exact path
    names                 map<string, string> case-insensitive attribute resolution: parent path
                                              + ``\\x1e`` + NAME → the path of the key
                                              ``values.Struct`` picks for it

A value whose family is known only at run time (an attribute, a carried column) is a struct V
holding every form the condition language can ask of it, computed once in Python so that no
conversion runs in Spark: ``f`` its family (S, N, R, D, or O for an object or a list), ``t`` its
text (``values.to_text``), ``n`` its NUMBER (its own, or TO_NUMBER of a string), ``tn`` TO_NUMBER
of its text, ``nt`` the text of that NUMBER, ``r`` its RAW (or HEXTORAW of a string), ``d`` its
DATE (or the string read as a date). NUMBERs are byte strings that sort like the numbers
(``number_key``: exact at any size, where DecimalType stops at 38 digits) and DATEs are fixed-width
ISO text, so every comparison is a binary comparison.

String comparisons are binary (UTF-8, so code-point order, as Python). Spark's ``upper``/``lower``
follow Spark's own Unicode tables, which know a few letters Python 3.11 does not (U+019B, U+0264
and letters added after Unicode 14); everything else maps as in Python. The few conversions of a
string computed in Spark (TO_NUMBER or a date of a field or of UPPER(...) compared with a number
or a date) and LIKE with an ESCAPE read from the message run as Python UDFs on the executors,
which must be able to import ``rules`` (set PYTHONPATH to the project root).

ORs are factored as in ``compile_sql`` (``factor_rule_sets``), so a set of table rules becomes a
few equalities and one IN list, which Spark turns into a hash-set lookup.

pyspark is imported only when a function needs it, so this module loads without Spark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import reduce
from typing import TYPE_CHECKING, Any

from rules.lang import values as v
from rules.lang.ast import (
    And,
    Attr,
    Bind,
    Call,
    Compare,
    Condition,
    Exists,
    Expr,
    InList,
    IsNull,
    Like,
    Not,
    Or,
)
from rules.lang.compile_python import constant_value, is_constant
from rules.lang.compile_sql import (
    ACCESS_FAMILY,
    DYNAMIC,
    FIELDS_OF_KIND,
    FLIP,
    Binding,
    convert_constant,
    factor_rule_sets,
    get_value_plan,
    like_plan,
    strict_variable,
    variable_binding,
)
from rules.lang.parser import ConditionError, _node_error

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import StructType

__all__ = [
    "compile_spark",
    "date_key",
    "message_row",
    "messages_to_rows",
    "number_key",
    "spark_schema",
]

LCR_COLUMNS = (
    "source_database_name",
    "command_type",
    "object_owner",
    "object_name",
    "object_type",
    "base_table_owner",
    "base_table_name",
)
COLUMNS = (
    "kind",
    "type_name",
    *LCR_COLUMNS,
    "tag",
    "old_values",
    "new_values",
    "scalar",
    "attrs",
    "names",
)
V_FIELDS = ("f", "t", "n", "tn", "nt", "r", "d")

_SEP, _NAMES = "\x1f", "\x1e"  # path separators; escaped inside keys
_WHITESPACE = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


# --- keys that sort like the values --------------------------------------------------------------

_EXP_BIAS = 1 << 62


def number_key(n: int | Decimal) -> bytes:
    """Bytes that compare (unsigned, lexicographically) as the numbers do, equal iff the numbers
    are: a sign byte, the biased decimal exponent, the significant digits (all complemented for
    negative numbers, then a terminator so that a shorter digit string sorts after)."""
    sign, digits, exp = Decimal(n).as_tuple()
    ds = list(digits)
    if not any(ds):
        return b"\x02"
    while ds[-1] == 0:
        ds.pop()
        exp += 1  # type: ignore[operator]
    while ds[0] == 0:
        ds.pop(0)
    e = (exp + len(ds) - 1 + _EXP_BIAS).to_bytes(8, "big")  # type: ignore[operator]
    if not sign:
        return b"\x03" + e + bytes(0x30 + d for d in ds)
    return b"\x01" + bytes(255 - b for b in e) + bytes(0x39 - d for d in ds) + b"\xff"


def date_key(d: datetime) -> str:
    """A DATE as fixed-width text, which sorts chronologically."""
    return d.isoformat(sep=" ", timespec="microseconds")


def _to_date(text: str) -> datetime | None:
    try:
        return v.to_date(text)
    except OverflowError:  # values.to_date raises near year 1 and 9999 with an offset
        return None


# --- rows ----------------------------------------------------------------------------------------


def spark_schema() -> StructType:
    """The schema of the message rows (see the module docstring)."""
    from pyspark.sql.types import BinaryType, MapType, StringType, StructField, StructType

    value = StructType(
        [
            StructField("f", StringType()),
            StructField("t", StringType()),
            StructField("n", BinaryType()),
            StructField("tn", BinaryType()),
            StructField("nt", StringType()),
            StructField("r", BinaryType()),
            StructField("d", StringType()),
        ]
    )
    string = StringType()
    return StructType(
        [
            StructField("kind", string, nullable=False),
            StructField("type_name", string),
            *(StructField(c, string) for c in LCR_COLUMNS),
            StructField("tag", BinaryType()),
            StructField("old_values", MapType(string, value)),
            StructField("new_values", MapType(string, value)),
            StructField("scalar", value),
            StructField("attrs", MapType(string, value)),
            StructField("names", MapType(string, string)),
        ]
    )


def _value_row(x: Any) -> tuple[Any, ...]:
    """The struct V of a value of the engine's domain."""
    fam = v._family(x)
    if fam is None:
        return (None if x is None else "O", None, None, None, None, None, None)
    t = v.to_text(x)
    n = v.access_number(x)
    tn = v.to_number(t) if t is not None else None
    r = v.access_raw(x)
    d = x if fam == "D" else (_to_date(x) if fam == "S" else None)
    return (
        fam,
        t,
        None if n is None else number_key(n),
        None if tn is None else number_key(tn),
        None if n is None else v.number_to_text(n),
        r,
        None if d is None else date_key(d),
    )


def _path(parent: str, key: str) -> str:
    return parent + _SEP + key.replace("\\", "\\\\").replace(_SEP, "\\u").replace(_NAMES, "\\r")


def _walk(exact: Mapping[str, Any], parent: str, attrs: dict, names: dict) -> None:
    chosen: dict[str, str] = {}
    for key, x in exact.items():
        path = _path(parent, key)
        up = key.upper()
        if up not in chosen or key == up:  # the rule of values.Struct
            chosen[up] = path
        if x is not None:
            attrs[path] = _value_row(x)
        if isinstance(x, v.Struct):
            _walk(x.exact, path, attrs, names)
    for up, path in chosen.items():
        names[parent + _NAMES + up] = path


def message_row(message: v.Message) -> tuple[Any, ...]:
    """One message as a row of ``spark_schema()``."""
    if isinstance(message, v.UserMessage):
        attrs: dict[str, Any] = {}
        names: dict[str, str] = {}
        _walk(message.exact, "", attrs, names)
        scalar = None if message.scalar is None else _value_row(message.scalar)
        return ("USER", message.type_name, *([None] * 8), None, None, scalar, attrs, names)
    fields = tuple(getattr(message, c, None) for c in LCR_COLUMNS)
    if isinstance(message, v.RowLCR):
        old = {k: _value_row(x) for k, x in message.old_values.items()}
        new = {k: _value_row(x) for k, x in message.new_values.items()}
        return ("ROW_LCR", None, *fields, message.tag, old, new, None, None, None)
    if isinstance(message, v.DdlLCR):
        return ("DDL_LCR", None, *fields, message.tag, None, None, None, None, None)
    raise TypeError(f"not a message: {message!r}")


def messages_to_rows(messages: Iterable[v.Message]) -> list[tuple[Any, ...]]:
    """Rows for ``spark.createDataFrame(rows, spark_schema())``."""
    return [message_row(m) for m in messages]


# --- Python UDFs for the rare conversions Spark cannot do exactly --------------------------------


def _udf_number_key(text: str | None) -> bytes | None:
    n = None if text is None else v.to_number(text)
    return None if n is None else number_key(n)


def _udf_date_key(text: str | None) -> str | None:
    d = None if text is None else _to_date(text)
    return None if d is None else date_key(d)


def _udf_like(text: str | None, pattern: str | None, escape: str | None) -> bool | None:
    return None if escape is None else v.like(text, pattern, escape)


_udfs: dict[str, Any] = {}


def _udf(name: str) -> Any:
    if name not in _udfs:
        from pyspark.sql import functions as F
        from pyspark.sql.types import BinaryType, BooleanType, StringType

        fn, ret = {
            "number": (_udf_number_key, BinaryType()),
            "date": (_udf_date_key, StringType()),
            "like": (_udf_like, BooleanType()),
        }[name]
        _udfs[name] = F.udf(fn, ret, useArrow=False)  # row at a time: no pandas needed
    return _udfs[name]


# --- the compiler --------------------------------------------------------------------------------


def compile_spark(cond: Condition, *, variables: Mapping[str, str] | None = None) -> Column:
    """The condition as a boolean Column over rows of ``spark_schema()``; variables are bound as
    in ``compile_sql``. Raises ConditionError for a node no compiler knows."""
    return _Compiler(variables).cond(factor_rule_sets(cond), frozenset())


@dataclass(frozen=True, slots=True)
class _Val:
    """A compiled value: ``fam`` S N R D (string, number key, binary, date key), V (a struct V),
    A (GET_VALUE's ANYDATA: a struct V, NULL when the column is not carried) or X (NULL).
    ``text`` is the text of a number; ``num``/``date`` the conversions of a string read from a
    struct V; ``tag`` the tag column behind IS_NULL_TAG."""

    fam: str
    col: Any = None
    const: Any = None
    is_const: bool = False
    text: Any = None
    num: Any = None
    date: Any = None
    tag: Any = None


_NULL = _Val("X")


class _Compiler:
    def __init__(self, variables: Mapping[str, str] | None) -> None:
        from pyspark.sql import functions as F

        self.F = F
        self.variables = variables

    # helpers

    def null(self) -> Column:
        return self.F.lit(None).cast("boolean")

    def lit_bool(self, r: bool | None) -> Column:
        return self.null() if r is None else self.F.lit(r)

    def const(self, c: Any) -> _Val:
        F = self.F
        fam = v._family(c)
        if c is None or fam is None:
            return _NULL
        if fam == "N":
            return _Val("N", F.lit(number_key(c)), c, True, F.lit(v.number_to_text(c)))
        if fam == "D":
            return _Val("D", F.lit(date_key(c)), c, True)
        if fam == "R":
            return _Val("R", F.lit(bytearray(c)), c, True)
        return _Val("S", F.lit(c), c, True)

    def binding(self, name: str) -> Binding:
        return variable_binding(name, self.variables)

    def bound(self, name: str) -> Column:
        F = self.F
        b = self.binding(name)
        if b.kind is None:
            return F.lit(False)
        test = F.col("kind") == F.lit(b.kind)
        if b.type_name is not None:
            test = test & F.coalesce(F.upper(F.col("type_name")) == b.type_name, F.lit(False))
        return test

    def guard(self, name: str, col: Column, assumed: frozenset[str]) -> Column:
        if name in assumed:
            return col
        return self.F.when(self.bound(name), col)

    # conditions

    def cond(self, node: Condition, assumed: frozenset[str]) -> Column:
        F = self.F
        var = strict_variable(node)
        if var is not None and var not in assumed:
            if self.binding(var).kind is None:
                return self.null()
            return F.when(self.bound(var), self.cond(node, assumed | {var}))
        match node:
            case Compare(op=op, left=a, right=b):
                return self.compare(op, self.value(a, assumed), self.value(b, assumed))
            case And(items=items):
                return reduce(lambda x, y: x & y, (self.cond(i, assumed) for i in items))
            case Or(items=items):
                return reduce(lambda x, y: x | y, (self.cond(i, assumed) for i in items))
            case Not(cond=inner):
                return ~self.cond(inner, assumed)
            case Exists(cond=inner):
                return self.cond(inner, assumed).eqNullSafe(True)
            case IsNull(expr=Bind(name=name), negated=neg):
                test = self.bound(name)
                return test if neg else ~test
            case IsNull(expr=e, negated=neg):
                return self.is_null(self.value(e, assumed), neg)
            case InList():
                return self.in_list(node, assumed)
            case Like():
                return self.like(node, assumed)
        raise ConditionError(f"not a condition: {node!r}")

    def is_null(self, x: _Val, negated: bool) -> Column:
        if x.is_const or x.fam == "X":
            return self.F.lit((x.const is None) != negated)
        if x.fam in ("V", "A"):
            test = x.col.isNull() if x.fam == "A" else x.col.isNull() | x.col["f"].isNull()
        else:
            test = x.col.isNull()
        return ~test if negated else test

    def compare(self, op: str, a: _Val, b: _Val) -> Column:
        F = self.F
        if a.is_const and b.is_const:
            return self.lit_bool(v.compare(op, a.const, b.const))
        if a.fam in ("X", "A") or b.fam in ("X", "A"):
            return self.null()
        if a.tag is not None and b.is_const:
            return self.null_tag_compare(op, a.tag, b.const)
        if b.tag is not None and a.is_const:
            return self.null_tag_compare(FLIP[op], b.tag, a.const)
        if b.fam == "V" and a.fam != "V":
            a, b, op = b, a, FLIP[op]
        if a.fam == "V":
            f = a.col["f"]
            if b.fam == "V":
                g = b.col["f"]
                return (
                    F.when((f == "S") & (g == "S"), _op(op, a.col["t"], b.col["t"]))
                    .when(f.isin("N", "S") & g.isin("N", "S"), _op(op, a.col["n"], b.col["n"]))
                    .when(f.isin("R", "S") & g.isin("R", "S"), _op(op, a.col["r"], b.col["r"]))
                    .when(f.isin("D", "S") & g.isin("D", "S"), _op(op, a.col["d"], b.col["d"]))
                )
            if b.fam == "S":
                out = F.when(f == "S", _op(op, a.col["t"], b.col))
                for fam, field in (("N", "n"), ("R", "r"), ("D", "d")):
                    conv = self.as_family(b, fam)
                    if conv.fam != "X":
                        out = out.when(f == fam, _op(op, a.col[field], conv.col))
                return out
            field = {"N": "n", "R": "r", "D": "d"}[b.fam]
            return F.when(f.isin(b.fam, "S"), _op(op, a.col[field], b.col))
        if a.fam != b.fam:
            # Different static families: only a string converts (values.coerce).
            if a.fam == "S":
                a = self.as_family(a, b.fam)
            elif b.fam == "S":
                b = self.as_family(b, a.fam)
            else:
                return self.null()
            if a.fam == "X" or b.fam == "X":
                return self.null()
        return _op(op, a.col, b.col)

    def null_tag_compare(self, op: str, tag: Column, c: Any) -> Column:
        # IS_NULL_TAG() is 'Y' or 'N': decide both outcomes now, test only the tag at run time.
        if_null, if_not = v.compare(op, "Y", c), v.compare(op, "N", c)
        if if_null is True and if_not is False:
            return tag.isNull()
        if if_null is False and if_not is True:
            return tag.isNotNull()
        if if_null == if_not:
            return self.lit_bool(if_null)
        return self.F.when(tag.isNull(), self.lit_bool(if_null)).otherwise(self.lit_bool(if_not))

    def as_family(self, x: _Val, family: str) -> _Val:
        """A string value converted to NUMBER, RAW or DATE for a comparison."""
        if x.is_const:
            return self.const(convert_constant(x.const, family))
        if family == "R":
            return _Val("R", self.hextoraw(x.col))
        if family == "N":
            col = x.num if x.num is not None else _udf("number")(x.col)
            return _Val("N", col)
        col = x.date if x.date is not None else _udf("date")(x.col)
        return _Val("D", col)

    def hextoraw(self, text: Column) -> Column:
        return self.F.when(text.rlike("^[0-9A-Fa-f]+\\z"), self.F.unhex(text))

    def in_list(self, node: InList, assumed: frozenset[str]) -> Column:
        F = self.F
        x = self.value(node.expr, assumed)
        items = [self.value(i, assumed) for i in node.items]
        constants = all(i.fam == "X" or (i.is_const and i.fam == "S") for i in items)
        if x.fam == "S" and not x.is_const and constants:
            # Spark's IN has the NULL semantics of the OR of equalities.
            test = x.col.isin(*(F.lit(i.const).cast("string") for i in items))
            return ~test if node.negated else test
        any_equal = reduce(lambda p, q: p | q, (self.compare("=", x, i) for i in items))
        return ~any_equal if node.negated else any_equal

    def like(self, node: Like, assumed: frozenset[str]) -> Column:
        F = self.F
        text = self.text(self.value(node.expr, assumed))
        has_escape = node.escape is not None
        if is_constant(node.pattern) and (not has_escape or is_constant(node.escape)):
            ec = constant_value(node.escape) if has_escape else None  # type: ignore[arg-type]
            tokens = like_plan(constant_value(node.pattern), ec, has_escape)
            if tokens is None or text is None:
                return self.null()
            test = self.like_tokens(text, tokens)
        else:
            pattern = self.text(self.value(node.pattern, assumed))
            if text is None or pattern is None:
                return self.null()
            if not has_escape:
                # Oracle has no escape character here; Spark's default one must be escaped.
                test = F.like(text, F.replace(pattern, F.lit("\\"), F.lit("\\\\")))
            elif is_constant(node.escape):  # type: ignore[arg-type]
                esc = v.to_text(constant_value(node.escape))  # type: ignore[arg-type]
                if esc is None or len(esc) != 1:
                    return self.null()
                if ord(esc) > 0xFFFF:
                    # One character, but two UTF-16 units: Spark's own LIKE refuses it.
                    test = _udf("like")(text, pattern, F.lit(esc))
                else:
                    rest = pattern
                    for pair in (esc + esc, esc + "%", esc + "_"):
                        rest = F.replace(rest, F.lit(pair), F.lit(""))
                    # Spark raises on a misused escape where Oracle raises and Python gives NULL.
                    test = F.when(F.instr(rest, esc) == 0, F.like(text, pattern, F.lit(esc)))
            else:
                esc_text = self.text(self.value(node.escape, assumed))  # type: ignore[arg-type]
                if esc_text is None:
                    return self.null()
                test = _udf("like")(text, pattern, esc_text)
        return ~test if node.negated else test

    def like_tokens(self, text: Column, tokens: tuple[int | str, ...]) -> Column:
        F = self.F
        wild = [i for i, t in enumerate(tokens) if type(t) is int]
        literal = "".join(t for t in tokens if type(t) is str)  # type: ignore[misc]
        if not wild:
            return text == F.lit(literal)
        if all(tokens[i] == 0 for i in wild):
            if wild == [len(tokens) - 1]:
                return text.startswith(literal)
            if wild == [0]:
                return text.endswith(literal)
            if wild == [0, len(tokens) - 1]:
                return text.contains(literal)
        out = []
        for t in tokens:
            if t == 0:
                out.append("%")
            elif t == 1:
                out.append("_")
            else:
                out.append("\\" + t if t in ("%", "_", "\\") else t)  # type: ignore[operator]
        return text.like("".join(out))

    # values

    def text(self, x: _Val) -> Column | None:
        """``values.to_text`` of a value, or None when it is always NULL."""
        F = self.F
        if x.is_const:
            t = v.to_text(x.const)
            return None if t is None else F.lit(t)
        match x.fam:
            case "S":
                return x.col
            case "N":
                return x.text
            case "R":
                return F.hex(x.col)
            case "D":
                return F.regexp_replace(x.col, "\\.000000\\z", "")
            case "V":
                return x.col["t"]
        return None

    def string(self, x: _Val) -> Column | None:
        """A value when it is a VARCHAR2 (GET_VALUE's arguments must be), else None."""
        if x.is_const:
            return self.F.lit(x.const) if type(x.const) is str else None
        if x.fam == "S":
            return x.col
        if x.fam == "V":
            return self.F.when(x.col["f"] == "S", x.col["t"])
        return None

    def value(self, e: Expr, assumed: frozenset[str]) -> _Val:
        F = self.F
        if is_constant(e):
            return self.const(constant_value(e))
        match e:
            case Bind(name=name):
                if self.binding(name).kind != "USER":
                    return _NULL
                return _Val("V", self.guard(name, F.col("scalar"), assumed))
            case Attr():
                path = self.path(e, assumed)
                if path is None:
                    return _NULL
                return _Val("V", F.element_at(F.col("attrs"), path))
            case Call(expr=None, name=name, args=(arg,)):
                t = self.text(self.value(arg, assumed))
                if t is None:
                    return _NULL
                if name == "HEXTORAW":
                    return _Val("R", self.hextoraw(t))
                if name == "UPPER":
                    return _Val("S", F.upper(t))
                if name == "LOWER":
                    return _Val("S", F.lower(t))
            case Call(expr=Bind(name=var), name=name, args=()) if name in v.LCR_FIELDS:
                return self.field(var, v.LCR_FIELDS[name], assumed)
            case Call(expr=Bind(name=var), name="GET_VALUE", args=args):
                return self.get_value(var, args, assumed)
            case Call(expr=inner, name=name, args=()) if name in ACCESS_FAMILY and inner:
                return self.access(name, self.value(inner, assumed))
        raise _node_error(e, f"cannot compile {type(e).__name__} {getattr(e, 'name', '')}")

    def path(self, e: Expr, assumed: frozenset[str]) -> Column | None:
        """The path of an attribute in the ``attrs`` map (see the module docstring)."""
        F = self.F
        if isinstance(e, Bind):
            if self.binding(e.name).kind != "USER":
                return None
            return self.guard(e.name, F.lit(""), assumed)
        if not isinstance(e, Attr):
            return None
        parent = self.path(e.expr, assumed)
        if parent is None:
            return None
        if e.quoted:
            return F.concat(parent, F.lit(_path("", e.name)))
        if e.name != e.name.upper():  # Struct.attrs holds upper-cased names only
            return None
        return F.element_at(F.col("names"), F.concat(parent, F.lit(_NAMES + e.name)))

    def field(self, var: str, field: str, assumed: frozenset[str]) -> _Val:
        F = self.F
        kind = self.binding(var).kind
        if kind is None or field not in FIELDS_OF_KIND[kind]:
            return _NULL
        if field == "tag":
            return _Val("R", self.guard(var, F.col("tag"), assumed))
        if field == "null_tag":
            tag = F.col("tag")
            col = self.guard(var, F.when(tag.isNull(), "Y").otherwise("N"), assumed)
            return _Val("S", col, tag=tag if var in assumed else None)
        return _Val("S", self.guard(var, F.col(field), assumed))

    def get_value(self, var: str, args: tuple[Expr, ...], assumed: frozenset[str]) -> _Val:
        F = self.F
        if self.binding(var).kind != "ROW_LCR":
            return _NULL
        old, new = F.col("old_values"), F.col("new_values")
        plan = get_value_plan(args)
        if plan is None:
            return _NULL
        if plan is not DYNAMIC:
            vt, col, use_old = plan  # type: ignore[misc]
            c = F.lit(col)
            if vt == "OLD":
                out = F.element_at(old, c)
            elif not use_old:
                out = F.element_at(new, c)
            else:
                out = F.when(F.map_contains_key(new, c), F.element_at(new, c)).otherwise(
                    F.element_at(old, c)
                )
            return _Val("A", self.guard(var, out, assumed))
        strings = [self.string(self.value(a, assumed)) for a in args]
        if len(strings) == 2:
            strings.append(F.lit("Y"))
        if any(s is None for s in strings):
            return _NULL
        vt, col, uo = F.upper(strings[0]), self.column_name(strings[1]), F.upper(strings[2])
        from_new = F.when(F.map_contains_key(new, col), F.element_at(new, col)).when(
            uo == "Y", F.element_at(old, col)
        )
        out = F.when(
            col.isNotNull() & uo.isin("Y", "N"),
            F.when(vt == "NEW", from_new).when(vt == "OLD", F.element_at(old, col)),
        )
        return _Val("A", self.guard(var, out, assumed))

    def column_name(self, text: Column) -> Column:
        """``values.column_name`` in Spark."""
        F = self.F
        t = F.btrim(text, F.lit(_WHITESPACE))
        inner = F.substring(t, F.lit(2), F.length(t) - 2)
        quoted = (F.length(t) >= 2) & t.startswith('"') & t.endswith('"') & ~inner.contains('"')
        return F.when(quoted, inner).when(~t.contains('"') & (t != ""), F.upper(t))

    def access(self, name: str, a: _Val) -> _Val:
        F = self.F
        if a.fam != "A":
            return _NULL
        s = a.col
        match ACCESS_FAMILY[name]:
            case "N":
                return _Val("N", s["n"], text=s["nt"])
            case "S":
                date = F.when(s["f"].isin("S", "D"), s["d"])
                return _Val("S", s["t"], num=s["tn"], date=date)
            case "D":
                return _Val("D", s["d"])
        return _Val("R", s["r"])


def _op(op: str, a: Column, b: Column) -> Column:
    match op:
        case "=":
            return a == b
        case "!=":
            return a != b
        case "<":
            return a < b
        case "<=":
            return a <= b
        case ">":
            return a > b
    return a >= b
