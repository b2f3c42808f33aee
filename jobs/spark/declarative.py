"""Declarative transformations of row LCRs as Spark SQL expressions (no Python UDF).

:func:`declarative_column` turns a rule's declarative steps (as the job's spec carries them) into
one Column that computes, from a ROW_LCR payload's JSON text, the JSON text the Python pipeline
would store (``run_transformations`` → ``message_content`` → ``json.dumps``), or SQL NULL for a
row it cannot prove it renders exactly (the caller then runs the Python path for that row).

How a payload is read, and why it is exact:

- ``try_parse_json`` (VARIANT) gives each column value's JSON type; ``from_json`` into
  ``map<string,string>`` gives each number's text as Jackson read it: integers digit for digit
  (any size), non-integers as ``Double.toString`` of the same correctly rounded double Python's
  ``json.loads`` reads. Strings are re-quoted from the VARIANT (``from_json`` drops the quotes).
- Each value is rendered as the JSON text the pipeline writes: NULL → ``null``, a string as is,
  ``true``/``false`` → the strings ``"true"``/``"false"`` (``from_json_value``), an integer as
  read. A non-integer is written by Python as ``repr(float)`` (shortest round-trip, nearest): the
  Java text is kept only when that is provably the same decimal — no decimal one digit shorter
  reads back as the same double, and the two half-way points one unit away read back strictly
  below/above it (so it is the nearest of its length). Infinity (an overflowing number) → null.
  Anything else (a nested value holding a non-integer or a boolean, a Java text that is not the
  shortest) renders as SQL NULL and makes the row fall back.
- The value lists are then maps of column → JSON text, so the steps are ``map_filter``,
  ``transform_keys`` and ``map_concat`` under ``when`` conditions mirroring
  :func:`rules.lang.transform.apply_declarative`, and the result is assembled as JSON text.

Pure of Django; pyspark is imported inside the functions (the module is shipped to executors).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rules.lang.transform import (
    ADD_COLUMN,
    COLUMN_TYPES,
    DEFAULT_ORDER,
    DELETE_COLUMN,
    KEEP_COLUMNS,
    RENAME_COLUMN,
    RENAME_SCHEMA,
    RENAME_TABLE,
    VALUE_TYPES,
    Declarative,
    ordered,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["declarative_column", "supported_steps"]

# Python's json.loads refuses integers longer than this (sys.int_info default), so the Python
# path fails on them: such rows must fall back rather than succeed here.
_MAX_INT_DIGITS = 4300
_RAW_SCHEMA = "struct<old_values: map<string,string>, new_values: map<string,string>>"
_INT = r"^-?[0-9]+\z"
_FLOAT = r"^-?([0-9]+)\.([0-9]+)(?:E(-?[0-9]+))?\z"
# A JSON string literal (possessive, so long strings cannot overflow Java's regex stack).
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
# What may remain of a nested value once its strings are blanked, for it to be rendered as
# read: structure, integers and null only (no non-integer, no boolean).
_NESTED_OK = r'^[\[\]{}:,"0-9\-nul\s]*\z'
_HEX_EVEN = r"^(?:[0-9A-Fa-f]{2})*\z"
_ASCII = r"^[\x00-\x7F]*\z"
_LISTS = {"OLD": ("old_values",), "NEW": ("new_values",), "*": ("old_values", "new_values")}
_CARRIED = {
    "INSERT": ("new_values",),
    "DELETE": ("old_values",),
    "UPDATE": ("old_values", "new_values"),
}


def _split(table: str) -> tuple[str, str]:
    owner, _, name = table.partition(".")  # as rules.lang.transform._split
    return owner, name


def _added_value(value: Any) -> str | None:
    """The JSON text the pipeline writes for an ADD COLUMN value: computed by the pipeline's own
    code (a RowLCR reads it with from_json_value, message_to_json writes it)."""
    from decimal import Decimal

    from rules.lang.pipeline import message_to_json
    from rules.lang.values import RowLCR, number_in_range

    number = isinstance(value, int | float) and not isinstance(value, bool)
    # Out of Oracle's NUMBER range, a later step that reads the LCR again makes it NULL.
    if number and not number_in_range(Decimal(repr(value) if isinstance(value, float) else value)):
        return None
    try:
        lcr = RowLCR("D", "INSERT", "O", "N", new_values={"C": value})
        return json.dumps(message_to_json(lcr)["new_values"]["C"], allow_nan=False)
    except (TypeError, ValueError, ArithmeticError):
        return None


def supported_steps(
    steps: list[dict[str, Any]], *, table: str | None = None
) -> list[tuple[Declarative, str | None]] | None:
    """The steps in execution order, each with its ADD COLUMN value's JSON text, or None when a
    step is not one the expressions reproduce exactly (the pipeline would raise on it, or it
    holds names that are not text)."""
    plan: list[Declarative] = []
    for d in steps:
        fields = dict(d)
        fields.setdefault("table", table)  # a step without its own scope takes the rule's
        try:
            t = Declarative(**fields)
        except TypeError:
            return None
        if t.declarative_type not in DEFAULT_ORDER or type(t.step_number) is not int:
            return None
        if t.table is not None and type(t.table) is not str:
            return None
        plan.append(t)
    out: list[tuple[Declarative, str | None]] = []
    for t in ordered(plan):
        kind = t.declarative_type
        if kind in COLUMN_TYPES and t.value_type not in VALUE_TYPES:
            return None  # the pipeline fails on it (KeyError): let it report that
        if kind == KEEP_COLUMNS:
            names: tuple[Any, ...] = t.column_list
        elif kind in (DELETE_COLUMN, ADD_COLUMN):
            names = (t.column_name,)
        elif kind == RENAME_COLUMN:
            names = (t.from_column_name, t.to_column_name)
        elif kind == RENAME_TABLE:
            names = (t.from_table_name, t.to_table_name)
        else:
            names = (t.from_schema_name, t.to_schema_name)
        if not all(type(n) is str for n in names):
            return None
        added = None
        if kind == ADD_COLUMN:
            added = _added_value(t.column_value)
            if added is None:
                return None
        out.append((t, added))
    return out


# --- values ------------------------------------------------------------------------------------


def _let(value: Column, body: Callable[[Column], Column]) -> Column:
    """``body(value)`` with ``value`` computed once: a one-element array's ``transform`` binds
    it to a lambda variable, so chained steps grow the plan linearly, not exponentially."""
    from pyspark.sql import functions as F

    return F.transform(F.array(value), body)[0]


# Oracle NUMBER's decimal exponents (rules.lang.values), beyond which the pipeline may not keep
# a number as it is.
_MIN_EXP, _MAX_EXP = -130, 125


def _number(raw: Column) -> Column:
    """The JSON text Python writes for a number read as ``raw`` (Jackson's text), or NULL when
    this cannot be proved equal to it (see the module docstring)."""
    from pyspark.sql import functions as F

    def grp(i: int) -> Column:
        return F.regexp_extract(raw, _FLOAT, i)

    digits = F.regexp_replace(F.concat(grp(1), grp(2)), "^0+", "")
    exp = F.coalesce(F.nullif(grp(3), F.lit("")).try_cast("int"), F.lit(0))

    def check(d: Column) -> Column:
        mantissa = F.regexp_replace(d["digits"], "0+$", "")  # significant digits only
        zeros = F.length(d["digits"]) - F.length(mantissa)
        parts = F.struct(
            mantissa.alias("s"),
            mantissa.try_cast("long").alias("m"),
            (d["exp"] - F.length(grp(2)) + zeros).alias("e"),  # value = m * 10^e
            F.abs(raw.try_cast("double")).alias("x"),
        )
        return _let(parts, proved)

    def read(k: Column, at: Column) -> Column:  # k * 10^at, as the double Spark reads
        return F.concat(k.cast("string"), F.lit("E"), at.cast("string")).try_cast("double")

    def proved(p: Column) -> Column:
        m, e, x = p["m"], p["e"], p["x"]
        shorter = F.floor(m / 10).cast("long")
        # No decimal one digit shorter reads back as x: the text is as short as repr's.
        shortest = (F.length(p["s"]) == 1) | (
            (read(shorter, e + 1) != x) & (read(shorter + 1, e + 1) != x)
        )
        # The half-way points to its neighbours read back strictly below and above x, so x
        # lies strictly between them: the text is the nearest of its length, as repr's is.
        nearest = (read(m * 10 - 5, e - 1) < x) & (read(m * 10 + 5, e - 1) > x)
        # Outside Oracle's NUMBER range the pipeline may write NULL (a step that rebuilds the
        # LCR reads its values again): left to the Python path.
        adjusted = e + F.length(p["s"]) - 1
        in_range = (adjusted >= F.lit(_MIN_EXP)) & (adjusted <= F.lit(_MAX_EXP))
        return F.when(p["s"] == "", raw).when(  # a zero: 0.0 or -0.0, as Python writes it
            (F.length(p["s"]) <= 17) & shortest & nearest & in_range, raw
        )

    return (
        F.when(
            raw.rlike(_INT),
            F.when(
                (F.length(raw) <= _MAX_INT_DIGITS)
                & (F.length(F.regexp_replace(raw, "^-", "")) <= _MAX_EXP + 1),
                raw,
            ),
        )
        .when(raw.isin("Infinity", "-Infinity"), F.lit("null"))  # json.loads: inf, then NULL
        .when(raw.rlike(_FLOAT), _let(F.struct(digits.alias("digits"), exp.alias("exp")), check))
    )


def _value(_key: Column, raw: Column, var: Column) -> Column:
    """One column value as the pipeline writes it (JSON text), or NULL when not provably so."""
    from pyspark.sql import functions as F

    blanked = F.regexp_replace(raw, _STRING, '""')
    nested = F.when(
        blanked.rlike(_NESTED_OK) & ~blanked.rlike(f"[0-9]{{{_MAX_INT_DIGITS + 1}}}"), raw
    )

    def by_type(t: Column) -> Column:
        return (
            F.when(var.isNull() | (t == "VOID"), F.lit("null"))
            .when(t == "STRING", F.to_json(var))
            .when(t == "BOOLEAN", F.when(raw == "true", '"true"').when(raw == "false", '"false"'))
            .when(t.startswith("OBJECT") | t.startswith("ARRAY"), nested)
            .when(raw.isNotNull(), _number(raw))
        )

    return _let(F.schema_of_variant(var), by_type)


def _object(m: Column) -> Column:
    """A map of column → JSON text as a JSON object."""
    from pyspark.sql import functions as F

    def entry(e: Column) -> Column:
        key = F.to_json(F.array(e["key"]))  # ["name"]: the key quoted and escaped
        return F.concat(F.substring(key, 2, F.length(key) - 2), F.lit(":"), e["value"])

    return F.concat(F.lit("{"), F.array_join(F.transform(F.map_entries(m), entry), ","), F.lit("}"))


# --- the column --------------------------------------------------------------------------------

_STATE = ("owner", "name", "old_values", "new_values")


def declarative_column(
    payload: Column, steps: list[dict[str, Any]], *, table: str | None
) -> Column | None:
    """The transformed payload's JSON text for a ROW_LCR ``payload`` (its JSON text), by Spark
    SQL expressions only; None when a step is not supported (keep the Python UDF for the rule).

    ``steps`` are ``Declarative.stored() | {"table": …}`` dicts; ``table`` scopes the steps that
    carry no ``table`` key. The column is NULL for a row the expressions cannot prove they render
    as the pipeline does (a payload the pipeline refuses, a number whose Python rendering cannot
    be proved, a nested value holding a boolean or a non-integer): run the Python path for it."""
    plan = supported_steps(steps, table=table)
    if plan is None:
        return None
    from pyspark.sql import functions as F

    v = F.try_parse_json(payload)

    def sub(name: str) -> Column:
        return F.try_variant_get(v, f"$.{name}", "variant")

    def type_of(name: str) -> Column:
        return F.schema_of_variant(sub(name))

    def text(name: str) -> Column:
        return F.when(type_of(name) == "STRING", F.try_variant_get(v, f"$.{name}", "string"))

    def absent(name: str) -> Column:
        return sub(name).isNull() | (type_of(name) == "VOID")

    # The checks message_from_queue → _row_lcr makes; a row failing them falls back (it errors).
    cmd, tag = text("command_type"), text("tag")
    valid = cmd.isNotNull() & text("object_owner").isNotNull() & text("object_name").isNotNull()
    valid &= absent("source_database_name") | text("source_database_name").isNotNull()
    valid &= absent("tag") | (tag.isNotNull() & tag.rlike(_HEX_EVEN))
    if any(t.declarative_type == ADD_COLUMN for t, _ in plan):
        valid &= cmd.rlike(_ASCII)  # only ASCII upper-cases the same in Python and Java

    # Jackson's text of each value; parsed only once the VARIANT parse succeeded (a duplicate
    # map key would make from_json fail the whole task).
    raw = F.when(v.isNotNull(), F.from_json(payload, _RAW_SCHEMA))
    lists = {}
    for lst in ("old_values", "new_values"):
        is_object = type_of(lst).startswith("OBJECT")
        valid &= absent(lst) | is_object
        variants = F.try_variant_get(v, f"$.{lst}", "map<string,variant>")
        lists[lst] = F.when(is_object, F.map_zip_with(raw[lst], variants, _value)).otherwise(
            F.create_map().cast("map<string,string>")
        )
    start = F.struct(
        text("object_owner").alias("owner"),
        text("object_name").alias("name"),
        lists["old_values"].alias("old_values"),
        lists["new_values"].alias("new_values"),
    )

    def run(state: Column) -> Column:
        origin = (state["owner"], state["name"])  # the object the rule fired for scopes columns
        for t, added in plan:
            state = _let(state, _stepper(t, added, origin, cmd))
        return state

    def out(s: Column) -> Column:
        head = F.to_json(
            F.struct(
                text("source_database_name").alias("source_database_name"),
                cmd.alias("command_type"),
                s["owner"].alias("object_owner"),
                s["name"].alias("object_name"),
                F.when(tag != "", F.upper(tag)).alias("tag"),
            ),
            {"ignoreNullFields": "false"},
        )
        body = F.concat(
            F.regexp_replace(head, r"\}\z", ""),  # the header object, left open
            F.lit(',"old_values":'),
            _object(s["old_values"]),
            F.lit(',"new_values":'),
            _object(s["new_values"]),
            F.lit("}"),
        )
        ok = F.lit(True)
        for lst in ("old_values", "new_values"):  # every value rendered exactly
            ok &= s[lst].isNotNull() & F.forall(F.map_values(s[lst]), lambda x: x.isNotNull())
        return F.when(ok, body)

    return F.when(F.coalesce(valid, F.lit(False)), _let(_let(start, run), out))


def _stepper(
    t: Declarative, added: str | None, origin: tuple[Column, Column], cmd: Column
) -> Callable[[Column], Column]:
    # A one-argument function: Spark reads a two-argument lambda as (element, index).
    return lambda s: _apply(s, t, added, origin, cmd)


def _apply(
    s: Column, t: Declarative, added: str | None, origin: tuple[Column, Column], cmd: Column
) -> Column:
    """The state (owner, name, value lists) after one step, as apply_declarative does it."""
    from pyspark.sql import functions as F

    owner, name = s["owner"], s["name"]
    fields = {f: s[f] for f in _STATE}
    kind = t.declarative_type
    if kind == RENAME_TABLE:
        (fo, fn), (to, tn) = _split(t.from_table_name), _split(t.to_table_name)
        hit = (owner == fo) & (name == fn)
        fields["owner"] = F.when(hit, F.lit(to)).otherwise(owner)
        fields["name"] = F.when(hit, F.lit(tn)).otherwise(name)
    elif kind == RENAME_SCHEMA:
        hit = owner == t.from_schema_name
        fields["owner"] = F.when(hit, F.lit(t.to_schema_name)).otherwise(owner)
    else:
        scoped = F.lit(True)
        if t.table is not None:
            so, sn = _split(t.table)
            scoped = (origin[0] == so) & (origin[1] == sn)
        cmd_up = F.upper(cmd)
        for lst in _LISTS[t.value_type]:
            m = s[lst]
            changed, when = _step(t, added, m)
            if kind == ADD_COLUMN:
                # ADD fills only a list the command carries, else a non-empty one.
                carried = [c for c, lists in _CARRIED.items() if lst in lists]
                when &= cmd_up.isin(carried) | (~cmd_up.isin(list(_CARRIED)) & (F.size(m) > 0))
            fields[lst] = F.when(scoped & when, changed).otherwise(m)
    return F.struct(*[fields[f].alias(f) for f in _STATE])


def _step(t: Declarative, added: str | None, m: Column) -> tuple[Column, Column]:
    """(the changed map, when the step changes it) for one column step on one value list."""
    from pyspark.sql import functions as F

    kind = t.declarative_type
    if kind == KEEP_COLUMNS:
        keep = F.array(*[F.lit(c) for c in t.column_list]).cast("array<string>")
        return F.map_filter(m, lambda k, _v: F.array_contains(keep, k)), F.lit(True)
    if kind == DELETE_COLUMN:
        return F.map_filter(m, lambda k, _v: k != t.column_name), F.lit(True)
    if kind == RENAME_COLUMN:
        src, dst = t.from_column_name, t.to_column_name
        renamed = F.transform_keys(
            F.map_filter(m, lambda k, _v: k != dst),  # never a duplicate key, even unguarded
            lambda k, _v: F.when(k == src, F.lit(dst)).otherwise(k),
        )
        return renamed, F.map_contains_key(m, src) & ~F.map_contains_key(m, dst)
    # ADD COLUMN: only when the list lacks the column (never overwrites)
    added_map = F.create_map(F.lit(t.column_name), F.lit(added))
    grown = F.map_concat(F.map_filter(m, lambda k, _v: k != t.column_name), added_map)
    return grown, ~F.map_contains_key(m, t.column_name)
