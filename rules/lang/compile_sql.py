"""Compile a condition tree into a PostgreSQL boolean expression over the queue's message rows.

The expression reads one row of ``aq_message`` (alias ``m`` by default): ``kind`` (ROW_LCR,
DDL_LCR or USER), ``type_name`` and the jsonb ``payload``. It returns TRUE, FALSE or NULL exactly
as ``compile_python`` does for the message ``values.message_from_queue`` builds from that row, so
the queue engine can put it in the ``WHERE`` of a dequeue or a subscriber's rule.

Variables: ``:dml`` is bound to row LCRs, ``:ddl`` to DDL LCRs, ``:msg`` and ``:"VAR$_n"`` to user
messages (with a ``variables`` map, as ``parser.validate`` takes it, a ``user:<TYPE>`` variable is
bound only to messages of that type); anything else is unbound, and an unbound variable reads as
NULL. Literals always travel as parameters (``%(r0)s``), never inside the SQL text, and the text
holds no other ``%``, so it can be pasted into any psycopg or Django query with parameters.

Value families follow ``rules.lang.values``: VARCHAR2 is ``text`` compared in code-point order
(``COLLATE "C"``), NUMBER is ``numeric`` (exact), RAW is ``bytea``, DATE is ``timestamp``. A value
read from a payload (a message attribute, a column value of GET_VALUE) has its family only at run
time; it stays ``jsonb`` and goes through the ``aq_rule_*`` helper functions of migration
``rules.0004_sql_functions``, which carry Oracle's implicit conversions and the engine's reading of
JSON numbers.

Before compiling, ORs are factored as a rule set is indexed (``factor_rule_sets``): 50 generated
table rules OR-ed together test the shared owner, tag and source once and the 50 names as one IN
list. What a variable's absence would make NULL is tested once around the whole predicate
(``strict_variable``), not at every field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    root_bind,
)
from rules.lang.compile_python import constant_value, is_constant
from rules.lang.parser import ConditionError, _node_error

__all__ = [
    "ACCESS_FAMILY",
    "DYNAMIC",
    "FIELDS_OF_KIND",
    "FLIP",
    "Binding",
    "SqlExpr",
    "compile_sql",
    "convert_constant",
    "factor_rule_sets",
    "get_value_plan",
    "like_plan",
    "strict_variable",
    "variable_binding",
]

# The queue engine's message kinds (queues.choices.MessageKind) for each variable family.
KIND_OF_FAMILY = {v.ROW_LCR: "ROW_LCR", v.DDL_LCR: "DDL_LCR", v.USER: "USER"}
ROW_FIELDS = frozenset(
    ("source_database_name", "command_type", "object_owner", "object_name", "tag", "null_tag")
)
DDL_FIELDS = ROW_FIELDS | {"object_type", "base_table_owner", "base_table_name"}
FIELDS_OF_KIND = {"ROW_LCR": ROW_FIELDS, "DDL_LCR": DDL_FIELDS, "USER": frozenset()}

FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SQL_OP = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# The family of what each ANYDATA accessor returns.
ACCESS_FAMILY = {
    "ACCESSNUMBER": "N",
    "ACCESSVARCHAR2": "S",
    "ACCESSCHAR": "S",
    "ACCESSDATE": "D",
    "ACCESSTIMESTAMP": "D",
    "ACCESSRAW": "R",
}


# --- what the compilers share --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Binding:
    """Which messages bind a variable: those of ``kind`` (ROW_LCR, DDL_LCR, USER; None for a
    variable nothing binds) and, for a user variable of one message type, only that type
    (upper-cased, as ``evaluate`` compares it)."""

    kind: str | None
    type_name: str | None = None


def variable_binding(name: str, variables: Mapping[str, str] | None = None) -> Binding:
    """The binding of the variable ``name`` (canonical, as in ``Bind.name``). Without a map the
    standard kinds apply (``DML``, ``DDL``, ``MSG``, ``VAR$…``), as in ``parser.validate``."""
    if variables is None:
        if name == "DML":
            return Binding("ROW_LCR")
        if name == "DDL":
            return Binding("DDL_LCR")
        if name == "MSG" or name.startswith("VAR$"):
            return Binding("USER")
        return Binding(None)
    for key, kind in variables.items():
        if v.variable_name(key) != name:
            continue
        family = v.kind_family(kind)
        type_name = None
        if family == v.USER and ":" in kind:
            type_name = kind.split(":", 1)[1].strip().upper()
        return Binding(KIND_OF_FAMILY[family], type_name)
    return Binding(None)


def strict_variable(node: Condition | Expr) -> str | None:
    """A variable whose being unbound makes ``node`` NULL, or None. The compilers test such a
    variable once around the whole node instead of at every field it reads."""
    match node:
        case Literal():
            return None
        case Bind(name=name):
            return name
        case Attr() | Call() if (r := root_bind(node)) is not None:
            return r.name
        case Call(expr=None, args=args):
            return next((s for a in args if (s := strict_variable(a)) is not None), None)
        case Compare(left=a, right=b):
            return strict_variable(a) or strict_variable(b)
        case Like(expr=e, pattern=p, escape=esc):
            parts = (e, p) if esc is None else (e, p, esc)
            return next((s for x in parts if (s := strict_variable(x)) is not None), None)
        case InList(expr=e):
            return strict_variable(e)
        case Not(cond=c):
            return strict_variable(c)
        case And(items=items) | Or(items=items):
            first = strict_variable(items[0])
            if first is not None and all(strict_variable(i) == first for i in items[1:]):
                return first
    return None


def like_plan(pattern: Any, escape: Any, has_escape: bool) -> tuple[int | str, ...] | None:
    """The tokens of a constant LIKE pattern (``values.like_tokens``), or None when the LIKE is
    NULL whatever the value: a NULL pattern or escape, an escape that is not one character or
    that the pattern misuses."""
    text = v.to_text(pattern)
    esc = v.to_text(escape) if has_escape else None
    if text is None or (has_escape and (esc is None or len(esc) != 1)):
        return None
    return v.like_tokens(text, esc)


DYNAMIC = object()


def get_value_plan(args: tuple[Expr, ...]) -> tuple[str, str, bool] | object | None:
    """GET_VALUE's arguments when they are constants: (``OLD`` or ``NEW``, the column, use_old),
    or None when they make it NULL (``values.get_value``'s checks); DYNAMIC when one of them is
    known only at run time."""
    if not all(is_constant(a) for a in args):
        return DYNAMIC
    value_type, column, *rest = (constant_value(a) for a in args)
    use_old = rest[0] if rest else "Y"
    if not all(type(x) is str for x in (value_type, column, use_old)):
        return None
    col, vt, uo = v.column_name(column), value_type.upper(), use_old.upper()
    if col is None or vt not in ("OLD", "NEW") or uo not in ("Y", "N"):
        return None
    return vt, col, uo == "Y"


def convert_constant(c: Any, family: str) -> Any:
    """A constant as a value of ``family`` (N, R, D) when compared with one: Oracle's implicit
    conversion of a string, the value itself when it already has that family, None otherwise."""
    fam = v._family(c)
    if fam == family:
        return c
    if fam != "S":
        return None
    if family == "N":
        return v.to_number(c)
    if family == "R":
        return v.hex_to_raw(c)
    try:
        return v.to_date(c)
    except OverflowError:  # values.to_date raises near year 1 and 9999 with an offset
        return None


def factor_rule_sets(cond: Condition) -> Condition:
    """The condition with every OR factored the way a rule set is indexed: a conjunct shared by
    several alternatives is tested once (``(a AND b) OR (a AND c)`` → ``a AND (b OR c)``), and
    equalities of one expression with several string constants become one IN list. An OR of 50
    generated table rules becomes ``tag IS NULL AND source = … AND owner = … AND name IN (…50…)``.

    Both laws hold in SQL's three-valued logic (it is a distributive lattice, with absorption),
    so the result has the same TRUE / FALSE / NULL as the original for every message."""
    match cond:
        case Or():
            return _factor([_conjuncts(factor_rule_sets(i)) for i in _alternatives(cond)])
        case And(items=items):
            return And(tuple(factor_rule_sets(i) for i in items))
        case Not(cond=inner):
            return Not(factor_rule_sets(inner))
        case Exists(cond=inner):
            return Exists(factor_rule_sets(inner))
    return cond


def _alternatives(node: Or) -> list[Condition]:
    out: list[Condition] = []
    for item in node.items:
        out.extend(_alternatives(item) if isinstance(item, Or) else [item])
    return out


def _conjuncts(node: Condition) -> tuple[Condition, ...]:
    if not isinstance(node, And):
        return (node,)
    out: list[Condition] = []
    for item in node.items:
        out.extend(_conjuncts(item))
    return tuple(dict.fromkeys(out))  # x AND x is x


def _and(items: tuple[Condition, ...] | list[Condition]) -> Condition:
    return items[0] if len(items) == 1 else And(tuple(items))


def _factor(alternatives: list[tuple[Condition, ...]]) -> Condition:
    """The OR of the alternatives (each a tuple of conjuncts), with shared conjuncts factored."""
    flat: list[tuple[Condition, ...]] = []
    for alt in alternatives:  # an alternative that is itself an OR joins this one
        if len(alt) == 1 and isinstance(alt[0], Or):
            flat.extend(_conjuncts(a) for a in _alternatives(alt[0]))
        else:
            flat.append(alt)
    alternatives = flat
    counts = Counter(c for alt in alternatives for c in alt)
    shared, n = counts.most_common(1)[0]
    if n < 2:
        return _in_lists([_and(alt) for alt in alternatives])
    with_it = [tuple(c for c in alt if c != shared) for alt in alternatives if shared in alt]
    rest = [alt for alt in alternatives if shared not in alt]
    if any(not alt for alt in with_it):
        factored = shared  # a OR (a AND b) is a
    else:
        inner = _factor(with_it)
        factored = And((shared, *(_conjuncts(inner) if isinstance(inner, And) else (inner,))))
    if not rest:
        return factored
    other = _factor(rest)
    return Or((factored, *(other.items if isinstance(other, Or) else (other,))))


def _in_lists(alternatives: list[Condition]) -> Condition:
    """``x = 'a' OR x = 'b'`` as ``x IN ('a', 'b')``: the same NULLs, one hash lookup."""
    groups: dict[Expr, list[Literal]] = {}
    out: list[Condition | Expr] = []
    for alt in alternatives:
        split = _string_equality(alt)
        if split is None:
            out.append(alt)
            continue
        expr, lit = split
        if expr not in groups:
            groups[expr] = []
            out.append(expr)  # a placeholder keeping the order
        groups[expr].append(lit)
    items: list[Condition] = []
    for x in out:
        if isinstance(x, Literal | Bind | Attr | Call):
            lits = groups[x]
            items.append(Compare("=", x, lits[0]) if len(lits) == 1 else InList(x, tuple(lits)))
        else:
            items.append(x)  # type: ignore[arg-type]
    return items[0] if len(items) == 1 else Or(tuple(items))


def _string_equality(node: Condition) -> tuple[Expr, Literal] | None:
    if not isinstance(node, Compare) or node.op != "=":
        return None
    for expr, other in ((node.left, node.right), (node.right, node.left)):
        if isinstance(other, Literal) and type(other.value) is str and not is_constant(expr):
            return expr, other
    return None


# --- the SQL compiler ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SqlExpr:
    """A boolean SQL expression over one message row, with its parameters."""

    sql: str
    params: dict[str, Any]


def compile_sql(
    cond: Condition,
    *,
    alias: str = "m",
    params_style: str = "psycopg",
    variables: Mapping[str, str] | None = None,
    param_prefix: str = "r",
    message_properties: bool = False,
) -> SqlExpr:
    """The condition as a PostgreSQL boolean expression over ``aq_message`` rows aliased
    ``alias``. ``param_prefix`` names the parameters (``r0``, ``r1``…): give each condition its
    own when several go into one query. Raises ConditionError for a node no compiler knows.

    ``message_properties``: the rows have the engine's ``origin_site`` and ``tag`` columns, which
    a change record's GET_SOURCE_DATABASE_NAME() and GET_TAG()/IS_NULL_TAG() read before its
    payload's fields (as ``message_from_queue(..., origin=, tag=)``)."""
    if params_style not in ("psycopg", "pyformat"):
        raise ValueError(f"unsupported params_style {params_style!r}: use 'psycopg'")
    if not alias.isidentifier():
        raise ValueError(f"not an SQL alias: {alias!r}")
    c = _Compiler(alias, variables, param_prefix)
    c.message_properties = message_properties
    sql = c.cond(factor_rule_sets(cond), frozenset())
    # Constants folded away at compile time (IS_NULL_TAG's 'Y') left parameters nobody reads.
    return SqlExpr(sql, {k: x for k, x in c.params.items() if f"%({k})s" in sql})


@dataclass(frozen=True, slots=True)
class _Val:
    """A compiled value. ``fam``: S N R D (text, numeric, bytea, timestamp), J (a jsonb value
    whose family is known at run time), A (GET_VALUE's ANYDATA: jsonb, SQL NULL when the column
    is not carried) or X (always NULL). ``text`` overrides the text form of a NUMBER whose
    printing depends on where it came from; ``tag`` is the tag expression behind IS_NULL_TAG."""

    fam: str
    sql: str = "NULL"
    const: Any = None
    is_const: bool = False
    text: str | None = None
    tag: str | None = None


_NULL = _Val("X")
_CASTS = {"S": "text", "N": "numeric", "R": "bytea", "D": "timestamp"}


class _Compiler:
    def __init__(self, alias: str, variables: Mapping[str, str] | None, prefix: str) -> None:
        self.alias = alias
        self.variables = variables
        self.prefix = prefix
        self.params: dict[str, Any] = {}
        self.message_properties = False

    # parameters and constants

    def param(self, value: Any, cast: str) -> str:
        name = f"{self.prefix}{len(self.params)}"
        self.params[name] = value
        return f"%({name})s::{cast}"

    def const(self, c: Any) -> _Val:
        fam = v._family(c)
        if c is None or fam is None:
            return _NULL
        value = str(c) if fam == "N" else c  # numeric from text: exact whatever its size
        return _Val(fam, self.param(value, _CASTS[fam]), c, True)

    # variables

    def binding(self, name: str) -> Binding:
        return variable_binding(name, self.variables)

    def bound(self, name: str) -> str:
        b = self.binding(name)
        if b.kind is None:
            return "FALSE"
        test = f"{self.alias}.kind = '{b.kind}'"
        if b.type_name is not None:
            upper = f"aq_rule_upper({self.alias}.type_name)"
            test = f"({test} AND coalesce({upper} = {self.param(b.type_name, 'text')}, FALSE))"
        return test

    def guard(self, name: str, sql: str, assumed: frozenset[str]) -> str:
        """``sql`` where the variable is bound, else NULL."""
        if name in assumed:
            return sql
        if self.binding(name).kind is None:
            return "NULL"
        return f"CASE WHEN {self.bound(name)} THEN {sql} END"

    @property
    def payload(self) -> str:
        return f"{self.alias}.payload"

    # conditions

    def cond(self, node: Condition, assumed: frozenset[str]) -> str:
        var = strict_variable(node)
        if var is not None and var not in assumed:
            if self.binding(var).kind is None:
                return "NULL::boolean"
            inner = self.cond(node, assumed | {var})
            return f"(CASE WHEN {self.bound(var)} THEN {inner} END)"
        match node:
            case Compare(op=op, left=a, right=b):
                return self.compare(op, self.value(a, assumed), self.value(b, assumed))
            case And(items=items):
                return "(" + " AND ".join(self.cond(i, assumed) for i in items) + ")"
            case Or(items=items):
                return "(" + " OR ".join(self.cond(i, assumed) for i in items) + ")"
            case Not(cond=inner):
                return f"(NOT {self.cond(inner, assumed)})"
            case Exists(cond=inner):
                return f"({self.cond(inner, assumed)} IS TRUE)"
            case IsNull(expr=Bind(name=name), negated=neg):
                # A bare variable is NULL when nothing is bound to it (compile_python does so).
                test = self.bound(name)
                return test if neg else f"(NOT {test})"
            case IsNull(expr=e, negated=neg):
                return self.is_null(self.value(e, assumed), neg)
            case InList():
                return self.in_list(node, assumed)
            case Like():
                return self.like(node, assumed)
        raise ConditionError(f"not a condition: {node!r}")

    def is_null(self, x: _Val, negated: bool) -> str:
        if x.is_const or x.fam == "X":
            return _bool((x.const is None) != negated)
        test = f"aq_rule_json_is_null({x.sql})" if x.fam == "J" else f"({x.sql} IS NULL)"
        return f"(NOT {test})" if negated else test

    def compare(self, op: str, a: _Val, b: _Val) -> str:
        if a.is_const and b.is_const:
            return _bool(v.compare(op, a.const, b.const))
        if a.fam in "XA" or b.fam in "XA":
            return "NULL::boolean"
        if a.tag is not None and b.is_const:
            return self.null_tag_compare(op, a.tag, b.const)
        if b.tag is not None and a.is_const:
            return self.null_tag_compare(FLIP[op], b.tag, a.const)
        if b.fam == "J" and a.fam != "J":
            a, b, op = b, a, FLIP[op]
        sop = _SQL_OP[op]
        if a.fam == "J":
            match b.fam:
                case "J":
                    return f"(aq_rule_cmp_json_json({a.sql}, {b.sql}) {sop} 0)"
                case "S":
                    sn = self.as_family(b, "N")
                    return f"(aq_rule_cmp_json_text({a.sql}, {b.sql}, {sn.sql}) {sop} 0)"
                case "N":
                    return f"(aq_rule_cmp_json_num({a.sql}, {b.sql}) {sop} 0)"
                case "R":
                    return f"(aq_rule_cmp_json_raw({a.sql}, {b.sql}) {sop} 0)"
                case "D":
                    return f"(aq_rule_cmp_json_date({a.sql}, {b.sql}) {sop} 0)"
        if a.fam == b.fam:
            if a.fam == "S" and op not in ("=", "!="):
                return f'(({a.sql}) COLLATE "C" {sop} ({b.sql}))'
            return f"({a.sql} {sop} {b.sql})"
        # Different static families: only a string converts (values.coerce).
        if a.fam == "S":
            a = self.as_family(a, b.fam)
        elif b.fam == "S":
            b = self.as_family(b, a.fam)
        else:
            return "NULL::boolean"
        if a.fam == "X" or b.fam == "X":
            return "NULL::boolean"
        return f"({a.sql} {sop} {b.sql})"

    def null_tag_compare(self, op: str, tag: str, c: Any) -> str:
        # IS_NULL_TAG() is 'Y' or 'N': decide both outcomes now, test only the tag at run time.
        if_null, if_not = v.compare(op, "Y", c), v.compare(op, "N", c)
        if if_null is True and if_not is False:
            return f"({tag} IS NULL)"
        if if_null is False and if_not is True:
            return f"({tag} IS NOT NULL)"
        if if_null == if_not:
            return _bool(if_null)
        return f"(CASE WHEN {tag} IS NULL THEN {_bool(if_null)} ELSE {_bool(if_not)} END)"

    def as_family(self, x: _Val, family: str) -> _Val:
        """A VARCHAR2 value converted to NUMBER, RAW or DATE for a comparison."""
        if x.is_const:
            return self.const(convert_constant(x.const, family))
        fn = {"N": "aq_rule_to_number", "R": "aq_rule_hextoraw", "D": "aq_rule_to_date"}[family]
        return _Val(family, f"{fn}({x.sql})")

    def in_list(self, node: InList, assumed: frozenset[str]) -> str:
        x = self.value(node.expr, assumed)
        items = [self.value(i, assumed) for i in node.items]
        if x.fam == "S" and not x.is_const and all(i.is_const and i.fam in "SX" for i in items):
            listed = ", ".join(i.sql for i in items)
            return f"({x.sql} {'NOT IN' if node.negated else 'IN'} ({listed}))"
        # x IN (a, b) is x = a OR x = b, with the same NULLs (compile_python's in_values).
        any_equal = "(" + " OR ".join(self.compare("=", x, i) for i in items) + ")"
        return f"(NOT {any_equal})" if node.negated else any_equal

    def like(self, node: Like, assumed: frozenset[str]) -> str:
        text = self.text(self.value(node.expr, assumed))
        has_escape = node.escape is not None
        pc = constant_value(node.pattern)
        if is_constant(node.pattern) and (not has_escape or is_constant(node.escape)):
            ec = constant_value(node.escape) if has_escape else None  # type: ignore[arg-type]
            tokens = like_plan(pc, ec, has_escape)
            if tokens is None or text is None:
                return "NULL::boolean"
            if all(type(t) is str for t in tokens):
                test = f"({text} = {self.param(''.join(tokens), 'text')})"  # type: ignore[arg-type]
            else:
                pattern = self.param(_pg_like_pattern(tokens), "text")
                test = f"({text} LIKE {pattern} ESCAPE E'\\\\')"
        else:
            pattern = self.text(self.value(node.pattern, assumed))
            if text is None or pattern is None:
                return "NULL::boolean"
            if not has_escape:
                test = f"({text} LIKE {pattern} ESCAPE '')"
            else:
                esc = self.text(self.value(node.escape, assumed))  # type: ignore[arg-type]
                if esc is None:
                    return "NULL::boolean"
                test = f"aq_rule_like_escape({text}, {pattern}, {esc})"
        return f"(NOT {test})" if node.negated else test

    # values

    def text(self, x: _Val) -> str | None:
        """``values.to_text`` of a value as SQL, or None when it is always NULL."""
        if x.is_const:
            t = v.to_text(x.const)
            return None if t is None else self.param(t, "text")
        match x.fam:
            case "S":
                return x.sql
            case "N":
                return x.text or f"aq_rule_num_text({x.sql})"
            case "R":
                return f"upper(encode({x.sql}, 'hex'))"
            case "D":
                return f"aq_rule_date_text({x.sql})"
            case "J":
                return f"aq_rule_json_text({x.sql})"
        return None

    def string(self, x: _Val) -> str | None:
        """A value as SQL text when it is a VARCHAR2 (GET_VALUE's arguments must be), else
        None."""
        if x.is_const:
            return self.param(x.const, "text") if type(x.const) is str else None
        if x.fam == "S":
            return x.sql
        if x.fam == "J":
            return (
                f"(CASE WHEN jsonb_typeof({x.sql}) IN ('string', 'boolean') "
                f"THEN {x.sql} #>> '{{}}' END)"
            )
        return None

    def value(self, e: Expr, assumed: frozenset[str]) -> _Val:
        if is_constant(e):
            return self.const(constant_value(e))
        match e:
            case Bind(name=name):
                if self.binding(name).kind != "USER":
                    return _NULL  # a change record has no scalar value
                scalar = (
                    f"CASE WHEN jsonb_typeof({self.payload}) <> 'object' THEN {self.payload} END"
                )
                return _Val("J", self.guard(name, scalar, assumed))
            case Attr(expr=inner, name=name, quoted=quoted):
                obj = self.object(inner, assumed)
                if obj is None:
                    return _NULL
                if quoted:
                    return _Val("J", f"({obj} -> {self.param(name, 'text')})")
                if name != name.upper():  # Struct.attrs holds upper-cased names only
                    return _NULL
                return _Val("J", f"aq_rule_attr({obj}, {self.param(name, 'text')})")
            case Call(expr=None, name=name, args=(arg,)):
                t = self.text(self.value(arg, assumed))
                if t is None:
                    return _NULL
                if name == "HEXTORAW":
                    return _Val("R", f"aq_rule_hextoraw({t})")
                if name in ("UPPER", "LOWER"):
                    return _Val("S", f"aq_rule_{name.lower()}({t})")
            case Call(expr=Bind(name=var), name=name, args=()) if name in v.LCR_FIELDS:
                return self.field(var, v.LCR_FIELDS[name], assumed)
            case Call(expr=Bind(name=var), name="GET_VALUE", args=args):
                return self.get_value(var, args, assumed)
            case Call(expr=inner, name=name, args=()) if name in ACCESS_FAMILY and inner:
                return self.access(name, self.value(inner, assumed))
        raise _node_error(e, f"cannot compile {type(e).__name__} {getattr(e, 'name', '')}")

    def object(self, e: Expr, assumed: frozenset[str]) -> str | None:
        """The jsonb object an attribute is read from, or None when there is none."""
        if isinstance(e, Bind):
            if self.binding(e.name).kind != "USER":
                return None
            return self.guard(e.name, self.payload, assumed)
        x = self.value(e, assumed)
        return x.sql if x.fam == "J" else None

    def field(self, var: str, field: str, assumed: frozenset[str]) -> _Val:
        kind = self.binding(var).kind
        if kind is None or field not in FIELDS_OF_KIND[kind]:
            return _NULL
        tag = f"aq_rule_tag({self.payload})"
        if self.message_properties:
            tag = f"coalesce({self.alias}.tag, {tag})"
        if field == "tag":
            return _Val("R", self.guard(var, tag, assumed))
        if field == "null_tag":
            sql = self.guard(var, f"CASE WHEN {tag} IS NULL THEN 'Y' ELSE 'N' END", assumed)
            # The tag alone decides comparisons, but only where the variable is known bound.
            return _Val("S", sql, tag=tag if var in assumed else None)
        text = f"({self.payload} ->> '{field}')"
        if self.message_properties and field == "source_database_name":
            text = f"coalesce({self.alias}.origin_site, {text})"
        return _Val("S", self.guard(var, text, assumed))

    def get_value(self, var: str, args: tuple[Expr, ...], assumed: frozenset[str]) -> _Val:
        if self.binding(var).kind != "ROW_LCR":
            return _NULL
        p = self.payload
        plan = get_value_plan(args)
        if plan is None:
            return _NULL
        if plan is not DYNAMIC:
            vt, col, use_old = plan  # type: ignore[misc]
            c = self.param(col, "text")
            if vt == "OLD":
                sql = f"({p} -> 'old_values' -> {c})"
            elif not use_old:
                sql = f"({p} -> 'new_values' -> {c})"
            else:
                sql = (
                    f"CASE WHEN ({p} -> 'new_values') ? {c} THEN {p} -> 'new_values' -> {c} "
                    f"ELSE {p} -> 'old_values' -> {c} END"
                )
            return _Val("A", self.guard(var, sql, assumed))
        strings = [self.string(self.value(a, assumed)) for a in args]
        if len(strings) == 2:
            strings.append(self.param("Y", "text"))
        if any(s is None for s in strings):
            return _NULL
        sql = f"aq_rule_get_value({p}, {', '.join(strings)})"  # type: ignore[arg-type]
        return _Val("A", self.guard(var, sql, assumed))

    def access(self, name: str, a: _Val) -> _Val:
        if a.fam != "A":
            return _NULL
        j = a.sql
        match ACCESS_FAMILY[name]:
            case "N":
                return _Val(
                    "N", f"aq_rule_json_to_number({j})", text=f"aq_rule_json_number_text({j})"
                )
            case "S":
                return _Val("S", f"aq_rule_json_text({j})")
            case "D":
                fn = "aq_rule_to_date"
            case _:
                fn = "aq_rule_hextoraw"
        fam = ACCESS_FAMILY[name]
        return _Val(fam, f"(CASE WHEN jsonb_typeof({j}) = 'string' THEN {fn}({j} #>> '{{}}') END)")


def _bool(r: bool | None) -> str:
    return "NULL::boolean" if r is None else ("TRUE" if r else "FALSE")


def _pg_like_pattern(tokens: tuple[int | str, ...]) -> str:
    """LIKE tokens as a PostgreSQL pattern with backslash as the escape character."""
    out = []
    for t in tokens:
        if t == 0:
            out.append("%")
        elif t == 1:
            out.append("_")
        else:
            out.append("\\" + t if t in ("%", "_", "\\") else t)  # type: ignore[operator]
    return "".join(out)
