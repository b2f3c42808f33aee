"""The condition tree: one immutable node type per construct of the condition language.

Every node carries the line and column (1-based) of the token that names it: the operator of a
comparison, the keyword of IN / IS / LIKE / NOT / EXISTS / AND / OR, the name of a call or an
attribute, the first character of a literal or bind variable. Positions are left out of equality and
hashing, so two trees are equal when they mean the same condition wherever it was written.

Names are canonical: plain (unquoted) identifiers are upper-cased as Oracle does, quoted ones are kept
exactly. Function and method names are always upper-cased (Oracle resolves them case-insensitively).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypeAlias

# NUMBER values are int when integral and short, Decimal otherwise; both compare exactly.
Number: TypeAlias = int | Decimal
LiteralValue: TypeAlias = str | Number | None

COMPARISON_OPERATORS = ("=", "!=", "<", "<=", ">", ">=")


def _pos() -> int:
    return field(default=0, compare=False, kw_only=True, repr=False)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Literal:
    """A string or number literal, or NULL (value None)."""

    value: LiteralValue
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Bind:
    """A bind variable: ``:dml`` (name ``DML``) or ``:"VAR$_52"`` (name ``VAR$_52``)."""

    name: str
    # Only how to print it back: :"DML" and :dml are the same variable.
    quoted: bool = field(default=False, compare=False)
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Attr:
    """Attribute access ``expr.name`` on a user-message variable or a nested payload object.

    A plain name matches payload keys case-insensitively; a quoted one matches exactly.
    """

    expr: Expr
    name: str
    quoted: bool = False
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Call:
    """A member call ``expr.name(args)`` or, with ``expr`` None, a built-in ``NAME(args)``."""

    expr: Expr | None
    name: str
    args: tuple[Expr, ...] = ()
    line: int = _pos()
    column: int = _pos()


Expr: TypeAlias = Literal | Bind | Attr | Call


@dataclass(frozen=True, slots=True)
class Compare:
    """``left op right`` with op one of ``= != < <= > >=`` (``<>`` and ``^=`` read as ``!=``)."""

    op: str
    left: Expr
    right: Expr
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class InList:
    expr: Expr
    items: tuple[Expr, ...]
    negated: bool = False
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class IsNull:
    expr: Expr
    negated: bool = False
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Like:
    expr: Expr
    pattern: Expr
    negated: bool = False
    escape: Expr | None = None
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Exists:
    """``EXISTS (SELECT 1 FROM SYS.DUAL WHERE cond)``: TRUE when cond is TRUE, else FALSE."""

    cond: Condition
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Not:
    cond: Condition
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class And:
    """Two or more conditions; ``a AND b AND c`` is one node, ``a AND (b AND c)`` two."""

    items: tuple[Condition, ...]
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Condition, ...]
    line: int = _pos()
    column: int = _pos()


Condition: TypeAlias = Compare | InList | IsNull | Like | Exists | Not | And | Or
Node: TypeAlias = Condition | Expr


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of ``node``, left to right."""
    match node:
        case Literal() | Bind():
            return ()
        case Attr(expr=e):
            return (e,)
        case Call(expr=e, args=args):
            return args if e is None else (e, *args)
        case Compare(left=a, right=b):
            return (a, b)
        case InList(expr=e, items=items):
            return (e, *items)
        case IsNull(expr=e):
            return (e,)
        case Like(expr=e, pattern=p, escape=esc):
            return (e, p) if esc is None else (e, p, esc)
        case Exists(cond=c) | Not(cond=c):
            return (c,)
        case And(items=items) | Or(items=items):
            return items
    raise TypeError(f"not a condition node: {node!r}")


def walk(node: Node):
    """Every node of the tree, parents before children (iterative: trees may be deep)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def variables_of(node: Node) -> frozenset[str]:
    """The canonical names of the bind variables a condition uses."""
    return frozenset(n.name for n in walk(node) if isinstance(n, Bind))


def root_bind(expr: Expr) -> Bind | None:
    """The variable an attribute/method chain starts from (``:dml`` for ``:dml.f().g()``)."""
    while True:
        match expr:
            case Bind():
                return expr
            case Attr(expr=e) | Call(expr=e) if e is not None:
                expr = e
            case _:
                return None
