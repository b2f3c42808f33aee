"""Simple and complex conditions (spec/rules.md §5.2, §7.2), and the equality predicates an index
can use.

A condition is **simple** when it is made only of comparisons ``expr op constant`` (either way
round, or constant with constant) joined by AND and OR, where ``expr`` is a variable, an attribute
of one, or a member function called **without arguments**, and op is ``= != < <= > >=``;
``expr IS [NOT] NULL`` counts as simple too (some Oracle releases do). A constant is a literal or
a built-in function of literals (``HEXTORAW('02')`` is folded). Anything else makes the condition
complex: NOT, EXISTS subqueries, IN, LIKE, member functions with arguments (``GET_VALUE``) and
what is read from their results, functions applied to variables, two variables compared.

The system-created global, schema, table and message rules are simple; subset rules are complex.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from typing import Literal as TypingLiteral

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
    Node,
    Not,
    Or,
)
from rules.lang.compile_python import _NOT_CONSTANT, constant_value

__all__ = ["classify", "equality_keys", "why_complex"]

# Cap on the alternatives one condition may spread over in the index; past it the condition is
# simply evaluated for every message.
MAX_ALTERNATIVES = 64


def classify(cond: Condition) -> TypingLiteral["simple", "complex"]:
    return "simple" if why_complex(cond) is None else "complex"


def why_complex(cond: Condition) -> str | None:
    """Why the condition is complex (``line 1, column 5: NOT makes a condition complex``), or None
    when it is simple."""
    found = _reason(cond)
    if found is None:
        return None
    node, reason = found
    return f"line {node.line or 1}, column {node.column or 1}: {reason}"


def _simple_expr(e: Expr) -> tuple[Node, str] | None:
    """None when ``e`` is a simple rule expression, else (node, reason)."""
    match e:
        case Bind():
            return None
        case Attr(expr=inner):
            return _simple_expr(inner)
        case Call(expr=None):
            return e, f"the function {e.name} is applied to a variable"
        case Call(expr=Bind(), args=()):
            return None
        case Call(expr=Bind()):
            return e, f"{e.name} takes arguments"
        case Call(expr=inner):
            return _simple_expr(inner) or (e, f"{e.name} reads the result of a member function")
    return e, "this expression is not a variable, an attribute or a member function"


def _reason(node: Condition) -> tuple[Node, str] | None:
    match node:
        case And(items=items) | Or(items=items):
            for item in items:
                r = _reason(item)
                if r is not None:
                    return r
            return None
        case Not():
            return node, "NOT makes a condition complex (a negative rule set avoids it)"
        case Exists():
            return node, "a subquery (EXISTS) makes a condition complex"
        case InList():
            return node, "IN makes a condition complex"
        case Like():
            return node, "LIKE makes a condition complex"
        case IsNull(expr=e):
            if constant_value(e) is not _NOT_CONSTANT:
                return None
            return _simple_expr(e)
        case Compare(left=a, right=b):
            ca = constant_value(a) is not _NOT_CONSTANT
            cb = constant_value(b) is not _NOT_CONSTANT
            if ca and cb:
                return None
            if ca or cb:
                return _simple_expr(b if ca else a)
            return node, "a comparison of two expressions that are not constants"
    return node, "unsupported construct"


# --- equality predicates -------------------------------------------------------------------------

# An alternative is a mapping accessor → constant that a message must match (all of it) for the
# condition to be TRUE; a list of alternatives is "one of these", None is "no constraint known".
Alternatives = list[dict[Expr, Any]] | None


def index_accessor(e: Expr) -> str | None:
    """``"field"`` for a no-argument member function of a change record (its value family is
    fixed), ``"attr"`` for an attribute chain of a user message (any family), else None."""
    if isinstance(e, Call) and isinstance(e.expr, Bind) and not e.args and e.name in v.LCR_FIELDS:
        return "field"
    if isinstance(e, Attr):
        inner: Expr = e
        while isinstance(inner, Attr):
            inner = inner.expr
        return "attr" if isinstance(inner, Bind) else None
    return None


def index_constant(accessor: Expr, c: Any) -> Any:
    """The constant as the index stores it for this accessor, or ``_NOT_CONSTANT`` when an exact
    lookup could miss a message the comparison would accept."""
    kind = index_accessor(accessor)
    if kind is None or c is None:
        return _NOT_CONSTANT
    if kind == "field":
        assert isinstance(accessor, Call)
        if accessor.name == "GET_TAG":
            if type(c) is str:  # compared as RAW: the string converts with HEXTORAW
                c = v.hex_to_raw(c)
            return c if type(c) is bytes else _NOT_CONSTANT
        return c if type(c) is str else _NOT_CONSTANT
    return c if type(c) in (str, int, Decimal) else _NOT_CONSTANT


def _leaf(accessor: Expr, constants: list[Any]) -> Alternatives:
    out = []
    for c in constants:
        if c is None:  # `= NULL` is never TRUE: this alternative can be dropped
            continue
        k = index_constant(accessor, c)
        if k is _NOT_CONSTANT:
            return None
        out.append({accessor: k})
    return out


def equality_keys(cond: Condition) -> Alternatives:
    """Equality predicates necessary for ``cond`` to be TRUE, for indexing a rule set.

    Returns a list of alternatives, each a mapping from an accessor expression (such as
    ``:dml.get_object_owner()`` or ``:msg.region``) to a constant: if the condition is TRUE for a
    message, then at least one alternative matches that message entirely (by SQL equality). An
    empty list means the condition can never be TRUE; None means no such predicates were found.
    The DDL table rule G8 gives two alternatives (object owner and name, or base-table owner and
    name), each also holding the tag and source-database tests.
    """
    match cond:
        case Compare(op="=", left=a, right=b):
            ca, cb = constant_value(a), constant_value(b)
            if cb is not _NOT_CONSTANT and index_accessor(a):
                return _leaf(a, [cb])
            if ca is not _NOT_CONSTANT and index_accessor(b):
                return _leaf(b, [ca])
            return None
        case InList(expr=e, items=items, negated=False) if index_accessor(e):
            consts = [constant_value(i) for i in items]
            if any(c is _NOT_CONSTANT for c in consts):
                return None
            return _leaf(e, consts)
        case Exists(cond=inner):
            return equality_keys(inner)
        case And(items=items):
            acc: list[dict[Expr, Any]] = [{}]
            for item in items:
                alts = equality_keys(item)
                if alts is None:
                    continue
                if not alts:
                    return []
                if len(acc) * len(alts) > MAX_ALTERNATIVES:
                    continue  # still a necessary condition without this conjunct
                # On a shared accessor keep the first constant: both are necessary, either one
                # alone still is.
                acc = [{**b, **a} for a in acc for b in alts]
            return None if acc == [{}] else acc
        case Or(items=items):
            out: list[dict[Expr, Any]] = []
            for item in items:
                alts = equality_keys(item)
                if alts is None:
                    return None
                out.extend(alts)
            return None if len(out) > MAX_ALTERNATIVES else out
    return None
