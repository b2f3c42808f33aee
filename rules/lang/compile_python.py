"""Compile a condition tree once into nested Python closures.

The closure takes bindings (variable name → message object or None) and returns True, False or
None (SQL NULL), with three-valued logic throughout. The tree is walked only here; evaluating a
message runs closures that already hold their constants, converted operands and field getters.

What makes it fast, measured with the seed's table rules (see docs/RULES_LANGUAGE.md):
- ``:v.get_object_owner() = 'HR'`` reads the record's slot with one ``attrgetter``; no-argument
  member functions are plain fields (IS_NULL_TAG is precomputed on the record);
- AND is flattened and its ``field = constant`` conjuncts on one variable are fused: one
  ``attrgetter`` builds a tuple that is compared with the tuple of constants, and only when that
  fails does a per-conjunct loop tell FALSE from NULL (the same for ``:msg.attr = constant``);
- a comparison with a constant converts the constant once, to every family it may meet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from operator import attrgetter, itemgetter
from typing import Any, TypeAlias

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
    Literal,
    Not,
    Or,
)
from rules.lang.parser import ConditionError, _node_error

__all__ = ["Bindings", "CompiledCondition", "compile_expr", "compile_python", "constant_value"]

Bindings: TypeAlias = Mapping[str, Any]
CompiledCondition: TypeAlias = Callable[[Bindings], bool | None]
ValueFn: TypeAlias = Callable[[Bindings], Any]

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NOT_CONSTANT = object()


def compile_python(cond: Condition) -> CompiledCondition:
    """The condition as a function of the bindings returning True, False or None."""
    return _cond(cond)


def compile_expr(expr: Expr) -> ValueFn:
    """An expression as a function of the bindings returning its value (None for NULL)."""
    return _value(expr)


# --- constants -----------------------------------------------------------------------------------


def constant_value(e: Expr) -> Any:
    """The value of a constant expression (a literal, or a built-in applied to constants, such
    as HEXTORAW('02')), or ``_NOT_CONSTANT``."""
    if isinstance(e, Literal):
        return e.value
    if isinstance(e, Call) and e.expr is None:
        args = [constant_value(a) for a in e.args]
        if any(a is _NOT_CONSTANT for a in args):
            return _NOT_CONSTANT
        return _builtin(e)(*args)
    return _NOT_CONSTANT


def is_constant(e: Expr) -> bool:
    return constant_value(e) is not _NOT_CONSTANT


def _hextoraw(x: Any) -> bytes | None:
    t = v.to_text(x)
    return None if t is None else v.hex_to_raw(t)


def _upper(x: Any) -> str | None:
    t = v.to_text(x)
    return None if t is None else t.upper()


def _lower(x: Any) -> str | None:
    t = v.to_text(x)
    return None if t is None else t.lower()


_BUILTINS: dict[str, Callable[[Any], Any]] = {
    "HEXTORAW": _hextoraw,
    "UPPER": _upper,
    "LOWER": _lower,
}


def _builtin(e: Call) -> Callable[..., Any]:
    fn = _BUILTINS.get(e.name)
    if fn is None or len(e.args) != 1:
        raise _node_error(e, f"unknown function {e.name}")
    return fn


# --- expressions ---------------------------------------------------------------------------------


def _const_fn(value: Any) -> ValueFn:
    return lambda b: value


def _object(e: Expr) -> ValueFn:
    """The object an attribute or member call reads: the bound message, or a payload object."""
    if isinstance(e, Bind):
        return itemgetter_or_none(e.name)
    return _value(e)


def itemgetter_or_none(name: str) -> ValueFn:
    def get(b: Bindings) -> Any:
        return b.get(name)

    return get


def _scalar(o: Any) -> Any:
    """The value of a bare variable: a user message's payload when it is not an object."""
    if o is None:
        return None
    if isinstance(o, v.UserMessage):
        return o.scalar
    if isinstance(o, v.RowLCR | v.DdlLCR | v.Struct | Mapping):
        return None
    x = v.from_json_value(o)
    return x if v.to_text(x) is not None else None


def _attr_slow(o: Any, name: str, quoted: bool) -> Any:
    if isinstance(o, Mapping):  # a raw payload bound instead of a UserMessage
        s = v.Struct(o)
        return (s.exact if quoted else s.attrs).get(name)
    return None


def _attr_fn(e: Attr) -> ValueFn:
    target, name, quoted = _object(e.expr), e.name, e.quoted
    if quoted:

        def get_exact(b: Bindings) -> Any:
            o = target(b)
            if o is None:
                return None
            try:
                return o.exact.get(name)
            except AttributeError:
                return _attr_slow(o, name, True)

        return get_exact

    def get(b: Bindings) -> Any:
        o = target(b)
        if o is None:
            return None
        try:
            return o.attrs.get(name)
        except AttributeError:
            return _attr_slow(o, name, False)

    return get


def _field_fn(var: str, field: str) -> ValueFn:
    getter = attrgetter(field)

    def get(b: Bindings) -> Any:
        o = b.get(var)
        if o is None:
            return None
        try:
            return getter(o)
        except AttributeError:  # a record without this field (GET_OBJECT_TYPE of a row LCR)
            return None

    return get


def _get_value_fn(e: Call) -> ValueFn:
    target = _object(e.expr)  # type: ignore[arg-type]
    arg_fns = [_value(a) for a in e.args]
    consts = [constant_value(a) for a in e.args]
    if all(c is not _NOT_CONSTANT for c in consts):
        value_type, column, *rest = consts
        use_old = rest[0] if rest else "Y"
        if (
            type(value_type) is str
            and type(column) is str
            and type(use_old) is str
            and value_type.upper() in ("OLD", "NEW")
            and use_old.upper() in ("Y", "N")
            and v.column_name(column) is not None
        ):
            return _get_value_const(
                target, value_type.upper(), v.column_name(column), use_old.upper() == "Y"
            )

    def get_value(b: Bindings) -> Any:
        o = target(b)
        if o is None:
            return None
        return v.get_value(o, *(f(b) for f in arg_fns))

    return get_value


def _get_value_const(target: ValueFn, value_type: str, col: str, use_old: bool) -> ValueFn:
    AnyData = v.AnyData
    if value_type == "OLD":

        def get_old(b: Bindings) -> Any:
            o = target(b)
            if o is None:
                return None
            try:
                values = o.old_values
            except AttributeError:
                return None
            return AnyData(values[col]) if col in values else None

        return get_old

    def get_new(b: Bindings) -> Any:
        o = target(b)
        if o is None:
            return None
        try:
            values = o.new_values
            if col in values:
                return AnyData(values[col])
            if not use_old:
                return None
            values = o.old_values
        except AttributeError:
            return None
        return AnyData(values[col]) if col in values else None

    return get_new


def _value(e: Expr) -> ValueFn:
    c = constant_value(e) if isinstance(e, Literal | Call) else _NOT_CONSTANT
    if c is not _NOT_CONSTANT:
        return _const_fn(c)
    if isinstance(e, Bind):
        name = e.name

        def bare(b: Bindings) -> Any:
            return _scalar(b.get(name))

        return bare
    if isinstance(e, Attr):
        return _attr_fn(e)
    if isinstance(e, Call):
        if e.expr is None:
            fn, arg = _builtin(e), _value(e.args[0])
            return lambda b: fn(arg(b))
        if isinstance(e.expr, Bind) and e.name in v.LCR_FIELDS and not e.args:
            return _field_fn(e.expr.name, v.LCR_FIELDS[e.name])
        if isinstance(e.expr, Bind) and e.name == "GET_VALUE":
            return _get_value_fn(e)
        accessor = v.ANYDATA_ACCESSORS.get(e.name)
        if accessor is not None and not e.args:
            inner = _value(e.expr)

            AnyData = v.AnyData

            def access(b: Bindings) -> Any:
                a = inner(b)
                return accessor(a.value) if type(a) is AnyData else None

            return access
        raise _node_error(e, f"unknown member function {e.name}")
    raise ConditionError(f"not an expression: {e!r}")


# --- comparisons ---------------------------------------------------------------------------------


def compare_with(op: str, c: Any) -> Callable[[Any], bool | None]:
    """``x op c`` for a constant ``c``, with ``c`` converted once to every family ``x`` may have."""
    if c is None:
        return lambda x: None
    opf = v.OPS[op]
    t = type(c)
    if t is str:
        cn, cr, cd = v.to_number(c), v.hex_to_raw(c), v.to_date(c)

        def other(x: Any, tx: type) -> bool | None:
            if tx is int or tx is Decimal:
                return None if cn is None else opf(x, cn)
            if tx is bytes:
                return None if cr is None else opf(x, cr)
            if tx is datetime:
                return None if cd is None else opf(x, cd)
            return None

        if op == "=":

            def eq_str(x: Any) -> bool | None:
                tx = type(x)
                if tx is str:
                    return x == c
                return None if x is None else other(x, tx)

            return eq_str

        def cmp_str(x: Any) -> bool | None:
            tx = type(x)
            if tx is str:
                return opf(x, c)
            return None if x is None else other(x, tx)

        return cmp_str
    if t is int or t is Decimal:

        def cmp_num(x: Any) -> bool | None:
            tx = type(x)
            if tx is int or tx is Decimal:
                return opf(x, c)
            if tx is str:
                n = v.to_number(x)
                return None if n is None else opf(n, c)
            return None

        return cmp_num
    if t is bytes or t is datetime:
        convert = v.hex_to_raw if t is bytes else v.to_date

        def cmp_same(x: Any) -> bool | None:
            tx = type(x)
            if tx is t:
                return opf(x, c)
            if tx is str:
                y = convert(x)
                return None if y is None else opf(y, c)
            return None

        return cmp_same
    return lambda x: None


def _lcr_field(e: Expr) -> tuple[str, str] | None:
    """(variable, field) for a no-argument member call on a variable."""
    if isinstance(e, Call) and isinstance(e.expr, Bind) and not e.args and e.name in v.LCR_FIELDS:
        return e.expr.name, v.LCR_FIELDS[e.name]
    return None


def _field_family(field: str) -> type:
    return bytes if field == "tag" else str


def _split_const(node: Compare) -> tuple[str, Expr, Any] | None:
    """(op, expression, constant) with the constant on the right, or None."""
    rc = constant_value(node.right)
    if rc is not _NOT_CONSTANT:
        return node.op, node.left, rc
    lc = constant_value(node.left)
    if lc is not _NOT_CONSTANT:
        return _FLIP[node.op], node.right, lc
    return None


def _compare(node: Compare) -> CompiledCondition:
    split = _split_const(node)
    if split is None:
        left, right, op = _value(node.left), _value(node.right), node.op
        return lambda b: v.compare(op, left(b), right(b))
    op, expr, c = split
    if constant_value(expr) is not _NOT_CONSTANT:
        result = v.compare(op, constant_value(expr), c)
        return lambda b: result
    field = _lcr_field(expr)
    if field is not None and c is not None and type(c) is _field_family(field[1]):
        return _field_compare(field[0], field[1], op, c)
    value, test = _value(expr), compare_with(op, c)
    return lambda b: test(value(b))


def _field_compare(var: str, field: str, op: str, c: Any) -> CompiledCondition:
    # The field is VARCHAR2 (or RAW for the tag) and so is the constant: no conversion.
    getter = attrgetter(field)
    if op == "=":

        def field_eq(b: Bindings) -> bool | None:
            o = b.get(var)
            if o is None:
                return None
            try:
                x = getter(o)
            except AttributeError:
                return None
            return None if x is None else x == c

        return field_eq
    opf = v.OPS[op]

    def field_cmp(b: Bindings) -> bool | None:
        o = b.get(var)
        if o is None:
            return None
        try:
            x = getter(o)
        except AttributeError:
            return None
        return None if x is None else opf(x, c)

    return field_cmp


# --- fused equalities ----------------------------------------------------------------------------


def _equality_member(node: Condition) -> tuple[str, str, str, Any] | None:
    """(group, variable, name, constant) when ``node`` is ``field = constant`` on a change record
    (group "field") or ``attribute = constant`` on a user message (group "attr")."""
    if not isinstance(node, Compare):
        return None
    split = _split_const(node)
    if split is None or split[0] != "=" or split[2] is None:
        return None
    _, expr, c = split
    field = _lcr_field(expr)
    if field is not None:
        if type(c) is _field_family(field[1]):
            return "field", field[0], field[1], c
        return None
    if (
        isinstance(expr, Attr)
        and isinstance(expr.expr, Bind)
        and not expr.quoted
        and type(c) in (str, int, Decimal)
    ):
        return "attr", expr.expr.name, expr.name, c
    return None


def _fused_fields(var: str, fields: list[str], consts: tuple, slow: CompiledCondition):
    getter = attrgetter(*fields)

    def fused(b: Bindings) -> bool | None:
        o = b.get(var)
        if o is None:
            return None
        try:
            t = getter(o)
        except AttributeError:
            return slow(b)
        if t == consts:
            return True
        unknown = False
        for x, c in zip(t, consts, strict=True):
            if x is None:
                unknown = True
            elif x != c:
                return False
        return None if unknown else True

    return fused


def _fused_attrs(var: str, names: list[str], consts: tuple, slow: CompiledCondition):
    getter = itemgetter(*names)
    tests = tuple(compare_with("=", c) for c in consts)

    def fused(b: Bindings) -> bool | None:
        o = b.get(var)
        if o is None:
            return None
        try:
            t = getter(o.attrs)
        except (AttributeError, KeyError):  # not a UserMessage, or a missing attribute (NULL)
            return slow(b)
        # Equal Python values are equal SQL values (int and Decimal compare exactly); anything
        # else goes through the comparison with implicit conversion.
        if t == consts:
            return True
        unknown = False
        for x, test in zip(t, tests, strict=True):
            r = test(x)
            if r is False:
                return False
            if r is None:
                unknown = True
        return None if unknown else True

    return fused


def _fuse_and(items: list[Condition]) -> list[CompiledCondition]:
    groups: dict[tuple[str, str], list[tuple[str, Any, Condition]]] = {}
    rest: list[Condition] = []
    for item in items:
        m = _equality_member(item)
        if m is None:
            rest.append(item)
        else:
            groups.setdefault((m[0], m[1]), []).append((m[2], m[3], item))
    out: list[CompiledCondition] = []
    for (kind, var), members in groups.items():
        if len(members) == 1:
            out.append(_cond(members[0][2]))
            continue
        names = [m[0] for m in members]
        consts = tuple(m[1] for m in members)
        slow = _and_fns([_cond(m[2]) for m in members])
        make = _fused_fields if kind == "field" else _fused_attrs
        out.append(make(var, names, consts, slow))
    # Cheap and selective tests first: AND is commutative and evaluation has no side effects.
    out.extend(_cond(c) for c in sorted(rest, key=_cost))
    return out


def _cost(c: Condition) -> int:
    if isinstance(c, Compare):
        return 0 if _split_const(c) is not None else 1
    if isinstance(c, IsNull | InList):
        return 1
    return 2


# --- logic ---------------------------------------------------------------------------------------


def _flatten(node: And | Or) -> list[Condition]:
    out: list[Condition] = []
    stack = list(reversed(node.items))
    while stack:
        c = stack.pop()
        if type(c) is type(node):
            stack.extend(reversed(c.items))  # type: ignore[union-attr]
        else:
            out.append(c)
    return out


def _and_fns(fns: list[CompiledCondition]) -> CompiledCondition:
    if len(fns) == 1:
        return fns[0]
    if len(fns) == 2:
        f1, f2 = fns

        def and2(b: Bindings) -> bool | None:
            r1 = f1(b)
            if r1 is False:
                return False
            r2 = f2(b)
            if r2 is False:
                return False
            return None if r1 is None or r2 is None else True

        return and2
    fs = tuple(fns)

    def and_n(b: Bindings) -> bool | None:
        unknown = False
        for f in fs:
            r = f(b)
            if r is False:
                return False
            if r is None:
                unknown = True
        return None if unknown else True

    return and_n


def _or_fns(fns: list[CompiledCondition]) -> CompiledCondition:
    if len(fns) == 1:
        return fns[0]
    if len(fns) == 2:
        f1, f2 = fns

        def or2(b: Bindings) -> bool | None:
            r1 = f1(b)
            if r1 is True:
                return True
            r2 = f2(b)
            if r2 is True:
                return True
            return None if r1 is None or r2 is None else False

        return or2
    fs = tuple(fns)

    def or_n(b: Bindings) -> bool | None:
        unknown = False
        for f in fs:
            r = f(b)
            if r is True:
                return True
            if r is None:
                unknown = True
        return None if unknown else False

    return or_n


def _not3(r: bool | None) -> bool | None:
    return None if r is None else not r


def _in_list(node: InList) -> CompiledCondition:
    value = _value(node.expr)
    consts = [constant_value(i) for i in node.items]
    negated = node.negated
    if all(c is not _NOT_CONSTANT for c in consts):
        has_null = any(c is None for c in consts)
        strings = frozenset(c for c in consts if type(c) is str)
        tests = tuple(compare_with("=", c) for c in consts if c is not None)

        def in_consts(b: Bindings) -> bool | None:
            x = value(b)
            if x is None:
                return None
            if type(x) is str and x in strings:
                return not negated
            unknown = has_null
            for test in tests:
                r = test(x)
                if r:
                    return not negated
                if r is None:
                    unknown = True
            return None if unknown else negated

        return in_consts
    items = tuple(_value(i) for i in node.items)

    def in_values(b: Bindings) -> bool | None:
        x = value(b)
        if x is None:
            return None
        unknown = False
        for item in items:
            r = v.compare("=", x, item(b))
            if r:
                return not negated
            if r is None:
                unknown = True
        return None if unknown else negated

    return in_values


def _like(node: Like) -> CompiledCondition:
    value = _value(node.expr)
    negated = node.negated
    has_escape = node.escape is not None
    pc = constant_value(node.pattern)
    ec = constant_value(node.escape) if has_escape else None  # type: ignore[arg-type]
    if pc is not _NOT_CONSTANT and ec is not _NOT_CONSTANT:
        pattern = v.to_text(pc)
        esc = v.to_text(ec) if has_escape else None
        if pattern is None or (has_escape and (esc is None or len(esc) != 1)):
            return lambda b: None  # a NULL pattern or escape: NULL whatever the value
        matcher = v.like_matcher(pattern, esc)
        if matcher is None:
            return lambda b: None

        def like_const(b: Bindings) -> bool | None:
            t = v.to_text(value(b))
            if t is None:
                return None
            return not matcher(t) if negated else matcher(t)

        return like_const
    pattern_fn = _value(node.pattern)
    escape_fn = _value(node.escape) if node.escape is not None else _const_fn(None)

    def like_dynamic(b: Bindings) -> bool | None:
        esc = escape_fn(b)
        if has_escape and esc is None:
            return None
        r = v.like(value(b), pattern_fn(b), esc)
        return _not3(r) if negated else r

    return like_dynamic


def _cond(node: Condition) -> CompiledCondition:
    match node:
        case Compare():
            return _compare(node)
        case And():
            return _and_fns(_fuse_and(_flatten(node)))
        case Or():
            return _or_fns([_cond(c) for c in _flatten(node)])
        case Not(cond=inner):
            f = _cond(inner)
            return lambda b: _not3(f(b))
        case Exists(cond=inner):
            f = _cond(inner)
            return lambda b: f(b) is True
        case IsNull(expr=Bind(name=name), negated=neg):
            # A bare variable is NULL when nothing is bound to it (its scalar value is not the
            # question: a bound row LCR is not NULL).
            return (lambda b: b.get(name) is not None) if neg else (lambda b: b.get(name) is None)
        case IsNull(expr=e, negated=neg):
            f = _value(e)
            return (lambda b: f(b) is not None) if neg else (lambda b: f(b) is None)
        case InList():
            return _in_list(node)
        case Like():
            return _like(node)
    raise ConditionError(f"not a condition: {node!r}")
