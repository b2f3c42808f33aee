"""Messages as the queue stores them, and hypothesis strategies for the compiler agreement tests.

A generated message is a queue row ``(kind, type_name, payload)``: the payload goes into
PostgreSQL as jsonb and comes back through psycopg, and the message every compiler sees is the one
``message_from_queue`` builds from what came back, which is what the queue engine evaluates.

The value pools overlap on purpose (``'2'``, ``2``, ``2.0``, ``' 2 '``, ``'02'``…) so that
comparisons across families are often TRUE, FALSE and NULL.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from rules.lang import (
    And,
    Attr,
    Bind,
    Call,
    Compare,
    ConditionError,
    DdlLCR,
    InList,
    IsNull,
    Like,
    Literal,
    Message,
    Or,
    RowLCR,
    UserMessage,
    parse,
    to_text,
    validate,
    variables_of,
)
from rules.lang import values as v
from rules.lang.compile_sql import variable_binding
from tests.rules.lang_strategies import LCR_METHODS_DDL, LCR_METHODS_ROW
from tests.rules.lang_strategies import _conditions as compound

# --- messages as queue rows ----------------------------------------------------------------------

_KINDS = {RowLCR: "ROW_LCR", DdlLCR: "DDL_LCR", UserMessage: "USER"}


def _json_value(x: Any) -> Any:
    """A value of the engine's domain back as JSON (for messages built in Python)."""
    if isinstance(x, bytes):
        return x.hex().upper()
    if isinstance(x, datetime):
        return v.date_to_text(x)
    if isinstance(x, v.Struct):
        return {k: _json_value(y) for k, y in x.exact.items()}
    if isinstance(x, tuple | list):
        return [_json_value(y) for y in x]
    if isinstance(x, Mapping):
        return {k: _json_value(y) for k, y in x.items()}
    return x


def _dumps(obj: Any) -> str:
    def number(o: Any) -> Any:
        if isinstance(o, Decimal):  # the seed's messages hold small exact numbers
            return int(o) if o == o.to_integral_value() else float(o)
        raise TypeError(f"not JSON: {o!r}")

    return json.dumps(obj, default=number)


def queue_row(message: Message) -> tuple[str, str, Any]:
    """``(kind, type_name, payload)`` of a message built in Python, as the engine stores it (the
    payload as the JSON object it writes)."""
    if isinstance(message, UserMessage):
        return "USER", message.type_name, json.loads(_dumps(_json_value(message.payload)))
    payload: dict[str, Any] = {
        "source_database_name": message.source_database_name,
        "command_type": message.command_type,
        "object_owner": message.object_owner,
        "object_name": message.object_name,
        "tag": message.tag.hex().upper() if message.tag else None,
    }
    if isinstance(message, RowLCR):
        payload["old_values"] = _json_value(message.old_values)
        payload["new_values"] = _json_value(message.new_values)
        return "ROW_LCR", "", json.loads(_dumps(payload))
    payload.update(
        object_type=message.object_type,
        base_table_owner=message.base_table_owner,
        base_table_name=message.base_table_name,
        ddl_text=message.ddl_text,
    )
    return "DDL_LCR", "", json.loads(_dumps(payload))


def bindings(message: Message, names: Iterable[str], variables=None) -> dict[str, Any]:
    """The Python bindings that match what the SQL and Spark compilers bind: each variable is
    bound to the message when the message has the variable's kind (and type)."""
    kind = _KINDS[type(message)]
    out: dict[str, Any] = {}
    for name in names:
        b = variable_binding(name, variables)
        ok = b.kind == kind and (
            b.type_name is None or message.type_name.upper() == b.type_name  # type: ignore[union-attr]
        )
        out[name] = message if ok else None
    return out


# --- value pools ---------------------------------------------------------------------------------


def _case_safe(c: str) -> bool:
    # Spark 4.3 maps the case of a few letters Python 3.11's Unicode 14 tables do not know
    # (U+019B, U+0264 and letters added since): leave unassigned code points and those two out.
    return unicodedata.category(c) not in ("Cn", "Cs") and c not in "\x00\u019b\u0264"


texts = st.text(st.characters(codec="utf-8").filter(_case_safe), max_size=5)
NUMERIC_TEXTS = ["2", "02", " 2 ", "2.0", "-1", "1e2", "1E-3", ".5", "5.", "+3", "x", "", " "]
DATE_TEXTS = [
    "2024-05-01",
    "2024-05-01 13:00:00",
    "2024-05-01T12:00:00.5+01:00",
    "2024-02-30",
    "2024-05-01Z",
    "2024-05-01 24:00",
]
HEX_TEXTS = ["02", "2", "0A0B", "ab", "zz", "00"]
WORDS = ["HR", "OE", "hr", "LOCATIONS", "A", "B", "Y", "N", "true", "EUROPE", "é", "ß", "\u0131"]
STRING_POOL = [*NUMERIC_TEXTS, *DATE_TEXTS, *HEX_TEXTS, *WORDS]
strings = st.one_of(st.sampled_from(STRING_POOL), texts)
NUMBER_POOL = [0, 1, 2, -1, 10, 100, 10**20, Decimal("2.5"), Decimal("0.1"), Decimal("-0.5")]
json_numbers = st.one_of(
    st.sampled_from([0, 1, 2, -1, 10, 100, 10**20, 2.0, 2.5, 0.1, -0.5, 1e-200, 1.5e300, 1e22]),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_scalars = st.one_of(st.none(), st.booleans(), json_numbers, strings)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "A", "B"]), inner)
    ),
    max_leaves=3,
)

COLUMNS = ["ID", "REGION_ID", "Odd name", "id"]
ATTR_KEYS = [
    "region",
    "REGION",
    "Region",
    "priority",
    "PRIORITY",
    "x",
    "a b",
    "\u0131d",
    "ID",
    "ss",
    "ß",
]
OWNERS = ["HR", "OE", "hr", "", None]
NAMES = ["LOCATIONS", "COUNTRIES", "A", "é", None]
SOURCES = ["DBS1.EXAMPLE.COM", "DB2", None]
COMMANDS = ["INSERT", "UPDATE", "DELETE"]
TAGS = [None, "", "02", "01", "0A0B", "ff"]
USER_TYPES = ["T1", "t1", "T2"]

column_values = st.dictionaries(st.sampled_from(COLUMNS), json_values, max_size=3)


def _row_payload(src, cmd, owner, name, tag, old, new) -> dict[str, Any]:
    return {
        "source_database_name": src,
        "command_type": cmd,
        "object_owner": owner,
        "object_name": name,
        "tag": tag,
        "old_values": old,
        "new_values": new,
    }


row_rows = st.builds(
    lambda p: ("ROW_LCR", "", p),
    st.builds(
        _row_payload,
        st.sampled_from(SOURCES),
        st.sampled_from(COMMANDS),
        # A row LCR always names its table (message_from_queue requires it).
        st.one_of(st.sampled_from([o for o in OWNERS if o is not None]), texts),
        st.one_of(st.sampled_from([n for n in NAMES if n is not None]), texts),
        st.sampled_from(TAGS),
        column_values,
        column_values,
    ),
)


def _ddl_payload(src, cmd, otype, owner, name, bowner, bname, tag) -> dict[str, Any]:
    return {
        "source_database_name": src,
        "command_type": cmd,
        "object_type": otype,
        "object_owner": owner,
        "object_name": name,
        "base_table_owner": bowner,
        "base_table_name": bname,
        "ddl_text": f"{cmd} ...",
        "tag": tag,
    }


ddl_rows = st.builds(
    lambda p: ("DDL_LCR", "", p),
    st.builds(
        _ddl_payload,
        st.sampled_from(SOURCES),
        st.sampled_from(["CREATE TABLE", "ALTER TABLE"]),
        st.sampled_from(["TABLE", "INDEX", None]),
        st.sampled_from(OWNERS),
        st.sampled_from(NAMES),
        st.sampled_from(OWNERS),
        st.sampled_from(NAMES),
        st.sampled_from(TAGS),
    ),
)
user_payloads = st.one_of(
    st.dictionaries(st.sampled_from(ATTR_KEYS), json_values, max_size=4),
    st.dictionaries(st.sampled_from(ATTR_KEYS), json_values, max_size=4),
    json_scalars,
    st.lists(json_scalars, max_size=2),
)
user_rows = st.builds(lambda t, p: ("USER", t, p), st.sampled_from(USER_TYPES), user_payloads)
queue_rows = st.one_of(row_rows, ddl_rows, user_rows)


# --- conditions ----------------------------------------------------------------------------------

DML, DDL = Bind("DML"), Bind("DDL")
USER_VARS = [Bind("MSG"), Bind("VAR$_52", True), Bind("X")]
ACCESSORS = [
    "ACCESSNUMBER",
    "ACCESSVARCHAR2",
    "ACCESSCHAR",
    "ACCESSDATE",
    "ACCESSTIMESTAMP",
    "ACCESSRAW",
]

literals = st.one_of(
    st.sampled_from(STRING_POOL),
    st.sampled_from(NUMBER_POOL),
    st.just(None),
    texts,
).map(Literal)
constants = st.one_of(
    literals,
    literals,
    st.sampled_from(HEX_TEXTS).map(lambda h: Call(None, "HEXTORAW", (Literal(h),))),
)
lcr_fields = st.one_of(
    st.sampled_from(LCR_METHODS_ROW).map(lambda n: Call(DML, n)),
    st.sampled_from(LCR_METHODS_DDL).map(lambda n: Call(DDL, n)),
)
column_args = st.one_of(
    st.sampled_from(['"ID"', '"REGION_ID"', "region_id", "id", '"Odd name"', ' "id" ', '"a"b"']),
    strings,
).map(Literal)
get_values = st.builds(
    lambda vt, col, rest: Call(DML, "GET_VALUE", (vt, col, *rest)),
    st.one_of(st.sampled_from(["OLD", "NEW", "new", "old", "x"]).map(Literal), lcr_fields),
    st.one_of(column_args, column_args, column_args, lcr_fields),
    st.one_of(
        st.just(()),
        st.sampled_from(["Y", "N", "n", "x"]).map(lambda s: (Literal(s),)),
        lcr_fields.map(lambda f: (f,)),
    ),
)
accessed = st.builds(lambda gv, acc: Call(gv, acc), get_values, st.sampled_from(ACCESSORS))
attr_names = st.one_of(
    st.sampled_from(["REGION", "PRIORITY", "X", "ID", "SS", "A", "region"]).map(
        lambda n: (n, False)
    ),
    st.sampled_from(["Region", "region", "priority", "a b", "ß", "A", "B"]).map(
        lambda n: (n, True)
    ),
)


@st.composite
def attributes(draw):
    node = draw(st.sampled_from(USER_VARS))
    for _ in range(draw(st.integers(1, 2))):
        name, quoted = draw(attr_names)
        node = Attr(node, name, quoted)
    return node


readers = st.one_of(lcr_fields, attributes(), accessed, st.sampled_from(USER_VARS))
functions = st.builds(
    lambda n, a: Call(None, n, (a,)), st.sampled_from(["UPPER", "LOWER", "HEXTORAW"]), readers
)
values = st.one_of(readers, readers, readers, constants, constants, functions)
operators = st.sampled_from(["=", "=", "!=", "<", "<=", ">", ">="])
patterns = st.one_of(
    st.sampled_from(["H%", "%R", "_R", "%", "%%", "a!%", "!!%", "x!", "2%", "%.%", "é_", "\\%"]),
    texts,
).map(Literal)

leaves = st.one_of(
    st.builds(Compare, operators, readers, constants),
    st.builds(Compare, operators, constants, readers),
    st.builds(Compare, operators, values, values),
    st.builds(InList, values, st.lists(values, min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(IsNull, st.one_of(readers, get_values, functions, constants), st.booleans()),
    st.builds(
        Like,
        values,
        patterns,
        st.booleans(),
        st.one_of(st.none(), st.sampled_from(["!", "%", "_", "ab", ""]).map(Literal)),
    ),
    st.builds(Like, values, values, st.booleans(), st.one_of(st.none(), values)),
)


condition_trees = st.recursive(leaves, compound, max_leaves=6)

# Rule sets: ORs of conjunctions drawn from a few shared atoms, as generated rules are, so that
# the compilers' factoring of shared conjuncts and IN lists is exercised.
field_equalities = st.builds(
    lambda f, c: Compare("=", f, Literal(c)),
    lcr_fields,
    st.sampled_from(["HR", "OE", "Y", "N", "LOCATIONS", "A", "DBS1.EXAMPLE.COM", "INSERT"]),
)


@st.composite
def rule_sets(draw):
    pool = draw(
        st.lists(st.one_of(field_equalities, field_equalities, leaves), min_size=2, max_size=6)
    )
    alternatives = draw(
        st.lists(st.lists(st.sampled_from(pool), min_size=1, max_size=4), min_size=2, max_size=8)
    )
    return Or(tuple(And(tuple(a)) if len(a) > 1 else a[0] for a in alternatives))


conditions = st.one_of(condition_trees, condition_trees, condition_trees, rule_sets())


def usable(tree) -> Any:
    """The tree as the parser returns it from its own text (trees the parser refuses are
    dropped: None), validated with the standard variables."""
    try:
        cond = parse(to_text(tree))
        validate(cond)
    except ConditionError:
        return None
    return cond


def condition_batch(size: int):
    return st.lists(conditions, min_size=size, max_size=size).map(
        lambda trees: [c for c in map(usable, trees) if c is not None]
    )


def names_of(conds: Sequence[Any]) -> set[str]:
    out: set[str] = set()
    for c in conds:
        out |= variables_of(c)
    return out


# --- evaluating batches on the three engines -----------------------------------------------------

Row = tuple[str, str, Any]  # kind, type_name, payload (a JSON-able object)


def message_of(row: Row) -> Message:
    """The message the engine reads from a row, without the database: the payload through JSON
    text as jsonb would give it back (key order aside)."""
    kind, type_name, payload = row
    back = json.loads(json.dumps(payload))
    return (
        UserMessage(type_name, back)
        if kind == "USER"
        else v.message_from_queue(kind, type_name, back)
    )


def store(conn, rows: Sequence[Row]) -> list[Message]:
    """Put the rows into the session's ``rule_msgs`` table and return the messages as the engine
    reads them back."""
    conn.execute("TRUNCATE rule_msgs")
    with conn.cursor().copy("COPY rule_msgs (id, kind, type_name, payload) FROM STDIN") as copy:
        for i, (kind, type_name, payload) in enumerate(rows):
            copy.write_row((i, kind, type_name, json.dumps(payload)))
    back = conn.execute("SELECT kind, type_name, payload FROM rule_msgs ORDER BY id").fetchall()
    # message_from_queue re-parses a payload that is a str as JSON text, so a user payload that
    # is the JSON string "2" would come back as the number 2 (reported); psycopg has already
    # decoded it, so build user messages directly.
    return [UserMessage(t, p) if k == "USER" else v.message_from_queue(k, t, p) for k, t, p in back]


def python_values(conds: Sequence[Any], messages: Sequence[Message], variables=None):
    """``[condition][message]`` → True / False / None with compile_python."""
    from rules.lang import compile_python

    out = []
    for cond in conds:
        fn, names = compile_python(cond), variables_of(cond)
        out.append([fn(bindings(m, names, variables)) for m in messages])
    return out


def sql_values(conn, conds: Sequence[Any], variables=None):
    """``[condition][message]`` of the messages in ``rule_msgs``, all conditions in one query."""
    from rules.lang.compile_sql import compile_sql

    exprs = [
        compile_sql(c, variables=variables, param_prefix=f"c{i}_") for i, c in enumerate(conds)
    ]
    params: dict[str, Any] = {}
    for e in exprs:
        params.update(e.params)
    cols = ", ".join(e.sql for e in exprs)
    rows = conn.execute(f"SELECT {cols} FROM rule_msgs m ORDER BY m.id", params).fetchall()
    return [[row[i] for row in rows] for i in range(len(conds))]


def spark_values(spark, conds: Sequence[Any], messages: Sequence[Message], variables=None):
    """``[condition][message]``: one DataFrame of the messages, one column per condition, one
    collect."""
    from pyspark.sql.types import LongType

    from rules.lang.compile_spark import compile_spark, messages_to_rows, spark_schema

    schema = spark_schema().add("id", LongType(), nullable=False)
    rows = [(*r, i) for i, r in enumerate(messages_to_rows(messages))]
    df = spark.createDataFrame(rows, schema)
    cols = [compile_spark(c, variables=variables).alias(f"c{i}") for i, c in enumerate(conds)]
    got = sorted(df.select("id", *cols).collect(), key=lambda r: r["id"])
    return [[r[f"c{i}"] for r in got] for i in range(len(conds))]


def mismatches(conds, rows, messages, **results) -> list[str]:
    """A line per (condition, message) on which the engines differ."""
    names = list(results)
    out = []
    for i, cond in enumerate(conds):
        for j, row in enumerate(rows):
            got = {n: results[n][i][j] for n in names}
            if len(set(map(repr, got.values()))) > 1:
                shown = ", ".join(f"{n}={g}" for n, g in got.items())
                out.append(f"{to_text(cond)}\n    on {row!r}\n    read as {messages[j]!r}: {shown}")
    return out
