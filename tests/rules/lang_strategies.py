"""Hypothesis strategies: condition trees the parser accepts, and messages drawn from the same
small value domains, so that generated conditions are often TRUE, FALSE and NULL."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import strategies as st

from rules.lang import (
    And,
    Attr,
    Bind,
    Call,
    Compare,
    DdlLCR,
    Exists,
    InList,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    RowLCR,
    UserMessage,
)

OWNERS = ["HR", "OE", "hr"]
NAMES = ["A", "B", "JOB_HISTORY"]
SOURCES = ["DB1", "DB2"]
COMMANDS = ["INSERT", "UPDATE", "DELETE"]
TAGS = [None, b"\x01", b"\x02"]
STRINGS = [*OWNERS, *NAMES, *SOURCES, *COMMANDS, "Y", "N", "01", "1", "2", "", " ", "a%", "x'y"]
NUMBERS = [0, 1, 2, -1, Decimal("1.0"), Decimal("2.5"), 10**20]
COLUMNS = ["ID", "REGION_ID"]
ATTRS = ["REGION", "PRIORITY", "X"]
USER_TYPES = ["T1", "T2"]

LCR_METHODS_ROW = [
    "GET_OBJECT_OWNER",
    "GET_OBJECT_NAME",
    "GET_COMMAND_TYPE",
    "GET_SOURCE_DATABASE_NAME",
    "IS_NULL_TAG",
    "GET_TAG",
]
LCR_METHODS_DDL = [
    *LCR_METHODS_ROW,
    "GET_OBJECT_TYPE",
    "GET_BASE_TABLE_OWNER",
    "GET_BASE_TABLE_NAME",
]

constants = st.one_of(
    st.sampled_from(STRINGS),
    st.sampled_from(NUMBERS),
    st.just(None),
).map(Literal)
hex_literals = st.sampled_from(["01", "02", "2", "0A0B"]).map(Literal)
any_text = st.text(max_size=6).map(Literal)

dml, ddl = Bind("DML"), Bind("DDL")
user_vars = st.sampled_from([Bind("MSG"), Bind("VAR$_52", True), Bind("Var x", True)])


def lcr_call(var: Bind, names: list[str]):
    return st.sampled_from(names).map(lambda n: Call(var, n, ()))


get_value = st.builds(
    lambda vt, col, rest: Call(dml, "GET_VALUE", (Literal(vt), Literal(col), *rest)),
    st.sampled_from(["OLD", "NEW", "new"]),
    st.sampled_from(['"ID"', '"REGION_ID"', "region_id", '"Odd name"']),
    st.sampled_from([(), (Literal("Y"),), (Literal("n"),)]),
)
accessed = st.builds(
    lambda gv, acc: Call(gv, acc, ()),
    get_value,
    st.sampled_from(["ACCESSNUMBER", "ACCESSVARCHAR2", "ACCESSDATE"]),
)
attr_names = st.one_of(
    st.sampled_from(ATTRS).map(lambda n: (n, False)),
    st.sampled_from(["Region", "priority", "a b"]).map(lambda n: (n, True)),
)


@st.composite
def attributes(draw):
    node = draw(user_vars)
    for _ in range(draw(st.integers(1, 2))):
        name, quoted = draw(attr_names)
        node = Attr(node, name, quoted)
    return node


accessors = st.one_of(
    lcr_call(dml, LCR_METHODS_ROW),
    lcr_call(ddl, LCR_METHODS_DDL),
    attributes(),
    accessed,
)
builtins = st.one_of(
    st.builds(lambda a: Call(None, "HEXTORAW", (a,)), st.one_of(hex_literals, accessors)),
    st.builds(lambda n, a: Call(None, n, (a,)), st.sampled_from(["UPPER", "LOWER"]), accessors),
)
values = st.one_of(accessors, accessors, constants, constants, builtins, any_text)
operators = st.sampled_from(["=", "=", "=", "!=", "<", "<=", ">", ">="])

leaves = st.one_of(
    st.builds(Compare, operators, accessors, constants),
    st.builds(Compare, operators, constants, accessors),
    st.builds(Compare, operators, values, values),
    st.builds(InList, values, st.lists(values, min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(IsNull, st.one_of(accessors, get_value, user_vars, st.just(dml)), st.booleans()),
    st.builds(
        Like,
        values,
        st.sampled_from(["H%", "%B", "_R", "%", "a!%", "x"]).map(Literal),
        st.booleans(),
        st.one_of(st.none(), st.just(Literal("!"))),
    ),
    st.builds(Like, values, values, st.booleans()),
)


def _conditions(children):
    return st.one_of(
        st.builds(And, st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.builds(Not, children),
        st.builds(Exists, children),
    )


conditions = st.recursive(leaves, _conditions, max_leaves=8)

columns = st.dictionaries(
    st.sampled_from([*COLUMNS, "Odd name"]),
    st.one_of(st.none(), st.sampled_from([1, 2, "2", "x", "2024-01-01", 2.5])),
    max_size=2,
)
opt = st.one_of(st.none(), st.sampled_from(OWNERS + NAMES))
row_lcrs = st.builds(
    RowLCR,
    st.one_of(st.none(), st.sampled_from(SOURCES)),
    st.sampled_from(COMMANDS),
    st.sampled_from(OWNERS),
    st.sampled_from(NAMES),
    st.sampled_from(TAGS),
    columns,
    columns,
)
ddl_lcrs = st.builds(
    DdlLCR,
    st.sampled_from(SOURCES),
    st.sampled_from(["CREATE TABLE", "ALTER TABLE"]),
    st.sampled_from(["TABLE", "INDEX"]),
    opt,
    opt,
    opt,
    opt,
    st.just("ddl"),
    st.sampled_from(TAGS),
)
payload_values = st.one_of(
    st.none(), st.sampled_from([*STRINGS, *NUMBERS, 1.0, True]), st.just({"REGION": "HR"})
)
user_messages = st.builds(
    UserMessage,
    st.sampled_from(USER_TYPES),
    st.dictionaries(st.sampled_from(["region", "PRIORITY", "Region", "x", "a b"]), payload_values),
)
messages = st.one_of(row_lcrs, ddl_lcrs, user_messages)
