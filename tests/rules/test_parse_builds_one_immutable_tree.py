"""``parse`` builds one immutable tree: canonical names (plain identifiers upper-cased, quoted ones
exact), typed literals, normalised operators, positions on every node (left out of equality)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from rules.lang import (
    And,
    Attr,
    Bind,
    Call,
    Compare,
    Exists,
    InList,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    parse,
    walk,
)
from tests.rules.lang_seed import G6, G7, G12_SUBSET_INSERT, G15


def owner(var: str, value: str) -> Compare:
    return Compare("=", Call(Bind(var), "GET_OBJECT_OWNER"), Literal(value))


def test_g7_parses_to_the_expected_tree() -> None:
    def dml(name: str, value: str) -> Compare:
        return Compare("=", Call(Bind("DML"), name), Literal(value))

    assert parse(G7) == And(
        (
            And((dml("GET_OBJECT_OWNER", "HR"), dml("GET_OBJECT_NAME", "LOCATIONS"))),
            dml("IS_NULL_TAG", "Y"),
            dml("GET_SOURCE_DATABASE_NAME", "DBS1.EXAMPLE.COM"),
        )
    )


def test_g6_keeps_or_inside_and() -> None:
    tree = parse(G6)
    assert isinstance(tree, And) and isinstance(tree.items[0], Or)
    assert tree.items[0].items == (
        owner("DDL", "HR"),
        Compare("=", Call(Bind("DDL"), "GET_BASE_TABLE_OWNER"), Literal("HR")),
    )


def test_g15_reads_attributes_of_a_quoted_variable() -> None:
    assert parse(G15) == And(
        (
            Compare("=", Attr(Bind("VAR$_52"), "REGION"), Literal("EUROPE")),
            Compare("=", Attr(Bind("VAR$_52"), "PRIORITY"), Literal("1")),
        )
    )


def test_subset_rules_use_every_construct_of_the_seed() -> None:
    kinds = {type(n) for n in walk(parse(G12_SUBSET_INSERT))}
    assert {And, Or, Not, Exists, InList, IsNull, Compare, Call, Bind, Literal} <= kinds
    gv = next(n for n in walk(parse(G12_SUBSET_INSERT)) if isinstance(n, Call) and n.args)
    assert gv == Call(Bind("DML"), "GET_VALUE", (Literal("NEW"), Literal('"REGION_ID"')))


@pytest.mark.parametrize(
    ("text", "name", "quoted"),
    [
        (":dml", "DML", False),
        (":DmL", "DML", False),
        (':"VAR$_52"', "VAR$_52", True),
        (':"Mixed"', "Mixed", True),
    ],
)
def test_bind_names_are_canonical(text, name, quoted) -> None:
    bind = parse(f"{text} IS NULL").expr
    assert bind == Bind(name) and bind.quoted is quoted


def test_attribute_names_are_upper_cased_unless_quoted() -> None:
    assert parse(":msg.Region IS NULL").expr == Attr(Bind("MSG"), "REGION")
    assert parse(':msg."Region" IS NULL').expr == Attr(Bind("MSG"), "Region", True)
    assert parse(':msg."Region" IS NULL') != parse(":msg.Region IS NULL")


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("'It''s'", "It's"),
        ("''", ""),
        ("'a\nb'", "a\nb"),
        ("2", 2),
        ("-3", -3),
        ("+4", 4),
        ("2.50", Decimal("2.50")),
        (".5", Decimal("0.5")),
        ("1e3", Decimal("1e3")),
        ("NULL", None),
    ],
)
def test_literals_are_typed(literal, value) -> None:
    lit = parse(f":msg.x = {literal}").right
    assert lit == Literal(value) and type(lit.value) is type(value)


@pytest.mark.parametrize("op", ["!=", "<>", "^="])
def test_the_three_spellings_of_not_equal_are_one_operator(op) -> None:
    assert parse(f":msg.x {op} 1").op == "!="


def test_keywords_are_case_insensitive_and_comments_ignored() -> None:
    a = parse(":msg.x is not null and not :msg.y in (1) or :msg.z not like 'a%' escape '!'")
    b = parse(
        ":msg.x IS NOT NULL -- a comment\n AND NOT :msg.y IN (1) /* another */ "
        "OR :msg.z NOT LIKE 'a%' ESCAPE '!'"
    )
    assert a == b
    x, y, z = (Attr(Bind("MSG"), n) for n in "XYZ")
    assert a == Or(
        (
            And((IsNull(x, True), Not(InList(y, (Literal(1),))))),
            Like(z, Literal("a%"), True, Literal("!")),
        )
    )


def test_not_exists_is_not_of_exists() -> None:
    tree = parse("NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE :msg.x = 1)")
    assert tree == Not(Exists(Compare("=", Attr(Bind("MSG"), "X"), Literal(1))))


def test_parenthesised_expressions_are_not_conditions() -> None:
    assert parse("(:msg.x) = (1)") == parse(":msg.x = 1")
    assert parse("((:msg.x = 1))") == parse(":msg.x = 1")


def test_every_node_knows_where_it_was_written() -> None:
    text = "(:dml.get_object_owner() = 'HR'\n and :dml.get_tag() IS NULL)"
    tree = parse(text)
    assert (tree.line, tree.column) == (2, 2)  # the AND
    first, second = tree.items
    assert (first.line, first.column) == (1, text.index("=") + 1)
    assert (first.left.line, first.left.column) == (1, text.index("get_object_owner") + 1)
    assert (first.left.expr.line, first.left.expr.column) == (1, 2)
    assert (first.right.line, first.right.column) == (1, text.index("'HR'") + 1)
    assert (second.line, second.column) == (2, text.split("\n")[1].index("IS") + 1)


def test_equality_ignores_positions_and_trees_are_immutable() -> None:
    a, b = parse(":msg.x=1"), parse("\n\n   :msg.x   =   1")
    assert a == b and hash(a) == hash(b)
    assert (a.line, a.column) != (b.line, b.column)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.op = "<"  # type: ignore[misc]
