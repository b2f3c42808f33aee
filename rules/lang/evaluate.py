"""Rule sets and the client's decision (spec/rules.md §2.2 Table 5-1, §2.3).

``decide`` evaluates the negative rule set first (a TRUE rule there discards), then: no positive
set performs, an empty positive set discards, otherwise the message is performed only if some
positive rule is TRUE. NULL is not TRUE, and a rule only applies to its message kind.

A rule set does not evaluate every rule for every message. Like Oracle's rules engine it indexes
the equality predicates of its rules (``equality_keys``): a table rule is filed under its
(owner, name, tag, source database) constants, and a message looks its own values up, so only the
rules that can be TRUE for it, plus the rules the index cannot file, are evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import product
from operator import attrgetter
from typing import Any

from rules.lang import values as v
from rules.lang.ast import Call, Condition, Expr, variables_of
from rules.lang.classify import equality_keys, index_accessor
from rules.lang.compile_python import Bindings, CompiledCondition, compile_expr, compile_python
from rules.lang.parser import _infer_kind, parse, validate

__all__ = [
    "DISCARD",
    "PERFORM",
    "CompiledRule",
    "Decision",
    "RuleSetSpec",
    "compile_rule",
    "decide",
    "explain",
]

PERFORM, DISCARD = "PERFORM", "DISCARD"
_INFER = object()


@dataclass(frozen=True, eq=False)
class CompiledRule:
    """A rule ready to evaluate: its name, condition text and tree, the compiled function, and the
    messages it applies to: ``row_lcr``, ``ddl_lcr``, ``user`` (any type), ``user:<TYPE>`` or
    None (any message; rules written by hand that mix variables)."""

    name: str
    text: str
    condition: Condition
    fn: CompiledCondition
    applies_to: str | None = None
    variables: frozenset[str] = field(default_factory=frozenset)

    def applies(self, message: v.Message) -> bool:
        return _applies(self.applies_to, message)

    def evaluate(self, message: v.Message) -> bool | None:
        """TRUE / FALSE / NULL for one message (NULL when the rule does not apply to it)."""
        if not self.applies(message):
            return None
        return self.fn(_bindings(message, self.variables))


def _applies(applies_to: str | None, message: v.Message) -> bool:
    if applies_to is None:
        return True
    kind = message.kind
    if applies_to == kind:
        return True
    if kind == v.USER and applies_to.startswith("user:"):
        return message.type_name.upper() == applies_to[5:].upper()  # type: ignore[union-attr]
    return False


def _bindings(message: v.Message, user_variables: Iterable[str]) -> dict[str, Any]:
    if isinstance(message, v.RowLCR):
        return {"DML": message}
    if isinstance(message, v.DdlLCR):
        return {"DDL": message}
    b = {name: message for name in user_variables if name not in ("DML", "DDL")}
    b["MSG"] = message
    return b


def _infer_applies_to(cond: Condition, variables: Mapping[str, str] | None) -> str | None:
    kinds = (
        {v.variable_name(k): kind.strip() for k, kind in variables.items()}
        if variables is not None
        else None
    )
    found: set[str] = set()
    for name in variables_of(cond):
        kind = kinds.get(name) if kinds is not None else _infer_kind(name)
        if kind is None:
            return None
        family = v.kind_family(kind)
        found.add(
            "user:" + kind.split(":", 1)[1].strip() if family == v.USER and ":" in kind else family
        )
    if len(found) == 1:
        return found.pop()
    if found and all(k.startswith(v.USER) for k in found):
        return v.USER  # several message types: any user message
    return None


def compile_rule(
    name: str,
    text: str,
    *,
    variables: Mapping[str, str] | None = None,
    applies_to: Any = _INFER,
) -> CompiledRule:
    """Parse, validate and compile one rule. ``applies_to`` defaults to the kind of the variables
    the condition uses (``:dml`` → row LCRs, a ``user:<TYPE>`` variable → messages of that type).
    Raises ConditionError."""
    cond = parse(text)
    validate(cond, variables=variables)
    if applies_to is _INFER:
        applies_to = _infer_applies_to(cond, variables)
    return CompiledRule(name, text, cond, compile_python(cond), applies_to, variables_of(cond))


# --- the index -----------------------------------------------------------------------------------


def _key_forms(value: Any, numbers: bool) -> tuple[Any, ...]:
    """The keys a message value of an attribute looks up (see ``values.value_keys``): its own
    value, plus its number when some constant filed under the attribute is a number."""
    if value is None:
        return ()
    t = type(value)
    if t is str:
        if numbers:
            n = v.to_number(value)
            if n is not None:
                return (value, n)
        return (value,)
    if v.to_text(value) is None:  # objects and lists equal no constant
        return ()
    return (value,)


class _Signature:
    """Rules filed under the same accessors: key tuple → rule positions."""

    def __init__(self, accessors: tuple[Expr, ...]) -> None:
        self.accessors = accessors
        self.table: dict[tuple[Any, ...], list[int]] = {}
        self.numbers = [False] * len(accessors)  # an accessor holding number constants
        self.keys: Callable[[Bindings], Iterable[tuple[Any, ...]]] = self._generic_keys
        self._fns = [compile_expr(a) for a in accessors]

    def add(self, alternative: Mapping[Expr, Any], position: int) -> None:
        forms = []
        for i, acc in enumerate(self.accessors):
            c = alternative[acc]
            if index_accessor(acc) == "attr":
                forms.append(v.value_keys(c))
                self.numbers[i] |= type(c) is not str
            else:
                forms.append((c,))
        for key in product(*forms):
            bucket = self.table.setdefault(key, [])
            if not bucket or bucket[-1] != position:
                bucket.append(position)

    def freeze(self) -> None:
        """Pick the fastest key function: member functions of one variable are read with a
        single attrgetter into the key tuple."""
        if all(index_accessor(a) == "field" for a in self.accessors):
            calls: list[Call] = list(self.accessors)  # type: ignore[arg-type]
            names = {c.expr.name for c in calls}  # type: ignore[union-attr]
            if len(names) == 1:
                (var,) = names
                fields = [v.LCR_FIELDS[c.name] for c in calls]
                getter = attrgetter(*fields)
                single = len(fields) == 1

                def field_keys(b: Bindings) -> Iterable[tuple[Any, ...]]:
                    o = b.get(var)
                    if o is None:
                        return ()
                    try:
                        k = getter(o)
                    except AttributeError:
                        return ()
                    return ((k,),) if single else (k,)

                self.keys = field_keys

    def _generic_keys(self, b: Bindings) -> Iterable[tuple[Any, ...]]:
        forms = []
        for fn, acc, numbers in zip(self._fns, self.accessors, self.numbers, strict=True):
            x = fn(b)
            if index_accessor(acc) == "field":
                if x is None:
                    return ()
                forms.append((x,))
            else:
                f = _key_forms(x, numbers)
                if not f:
                    return ()
                forms.append(f)
        return product(*forms)

    def lookup(self, b: Bindings, out: list[list[int]]) -> None:
        table = self.table
        for key in self.keys(b):
            hit = table.get(key)
            if hit is not None:
                out.append(hit)


class _Index:
    """The rules of one message kind: filed by their equality predicates, or always evaluated."""

    def __init__(self, rules: list[tuple[int, CompiledRule]]) -> None:
        self.always: list[int] = []
        by_sig: dict[tuple[Expr, ...], _Signature] = {}
        for position, rule in rules:
            alternatives = equality_keys(rule.condition)
            if alternatives is None:
                self.always.append(position)
                continue
            for alt in alternatives:  # an empty list: the rule can never be TRUE
                accessors = tuple(sorted(alt, key=repr))
                sig = by_sig.get(accessors)
                if sig is None:
                    sig = by_sig[accessors] = _Signature(accessors)
                sig.add(alt, position)
        for sig in by_sig.values():
            sig.freeze()
        self.signatures = tuple(by_sig.values())

    def candidates(self, b: Bindings, out: list[list[int]]) -> None:
        if self.always:
            out.append(self.always)
        for sig in self.signatures:
            sig.lookup(b, out)


class RuleSetSpec:
    """A rule set ready to evaluate: its compiled rules, OR-ed, filed in an index.

    ``RuleSetSpec([])`` is an empty rule set (it discards everything when positive), which is not
    the same as no rule set (``None``).
    """

    def __init__(self, rules: Iterable[CompiledRule], *, name: str = "", indexed: bool = True):
        self.name = name
        self.rules: tuple[CompiledRule, ...] = tuple(rules)
        self.indexed = indexed
        self.user_variables = frozenset(
            n for r in self.rules for n in r.variables if n not in ("DML", "DDL")
        )
        buckets: dict[str, list[tuple[int, CompiledRule]]] = {}
        for i, rule in enumerate(self.rules):
            key = rule.applies_to or "*"
            if key.startswith("user:"):
                key = "user:" + key[5:].upper()
            buckets.setdefault(key, []).append((i, rule))
        self._indexes = {k: _Index(rs) for k, rs in buckets.items()}
        self._plans: dict[str, tuple[_Index, ...]] = {}

    @classmethod
    def from_conditions(
        cls,
        conditions: Iterable[str] | Mapping[str, str],
        *,
        variables: Mapping[str, str] | None = None,
        name: str = "",
    ) -> RuleSetSpec:
        """A rule set from condition texts (named ``R1``, ``R2``… unless given as a mapping
        name → condition). Raises ConditionError."""
        items = (
            list(conditions.items())
            if isinstance(conditions, Mapping)
            else [(f"R{i}", c) for i, c in enumerate(conditions, 1)]
        )
        return cls([compile_rule(n, c, variables=variables) for n, c in items], name=name)

    @property
    def is_empty(self) -> bool:
        return not self.rules

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"RuleSetSpec({self.name!r}, {len(self.rules)} rules)"

    def bindings(self, message: v.Message) -> dict[str, Any]:
        return _bindings(message, self.user_variables)

    def _plan(self, message: v.Message) -> tuple[_Index, ...]:
        key = message.kind
        if key == v.USER:
            key = "user:" + message.type_name.upper()  # type: ignore[union-attr]
        plan = self._plans.get(key)
        if plan is None:
            names = [message.kind, "*"]
            if message.kind == v.USER:
                names.append(key)
            plan = tuple(self._indexes[n] for n in names if n in self._indexes)
            if len(self._plans) < 1024:
                self._plans[key] = plan
        return plan

    def candidates(self, message: v.Message, b: Bindings | None = None) -> list[int]:
        """Positions of the rules that may be TRUE for the message, in rule-set order."""
        if b is None:
            b = self.bindings(message)
        if not self.indexed:
            return [i for i, r in enumerate(self.rules) if r.applies(message)]
        lists: list[list[int]] = []
        for index in self._plan(message):
            index.candidates(b, lists)
        if not lists:
            return []
        if len(lists) == 1:
            return lists[0]
        return sorted({i for lst in lists for i in lst})

    def true_rules(
        self, message: v.Message, *, first: bool = False, b: Bindings | None = None
    ) -> list[CompiledRule]:
        """The rules that are TRUE for the message (only the first, in rule-set order, when
        ``first``)."""
        if b is None:
            b = self.bindings(message)
        rules = self.rules
        hits = []
        for i in self.candidates(message, b):
            rule = rules[i]
            if rule.fn(b) is True:
                hits.append(rule)
                if first:
                    break
        return hits

    def explain(self, message: v.Message) -> list[tuple[str, bool | None]]:
        """Every rule's value for the message (NULL for rules that do not apply to it)."""
        b = self.bindings(message)
        return [(r.name, r.fn(b) if r.applies(message) else None) for r in self.rules]


@dataclass(frozen=True)
class Decision:
    """What the client does with a message, why, and which rule decided."""

    perform: bool
    reason: str
    rule: CompiledRule | None = None
    hits: tuple[CompiledRule, ...] = ()

    @property
    def action(self) -> str:
        return PERFORM if self.perform else DISCARD


def decide(
    message: v.Message,
    *,
    positive: RuleSetSpec | None,
    negative: RuleSetSpec | None,
    all_hits: bool = False,
) -> Decision:
    """Table 5-1: negative set first, then the positive set. ``hits`` holds the TRUE positive
    rules (the first only, unless ``all_hits``), whose action contexts the client applies."""
    if negative is not None and negative.rules:
        hit = negative.true_rules(message, first=True)
        if hit:
            return Decision(False, f"negative rule {hit[0].name} is TRUE", hit[0])
    if positive is None:
        return Decision(True, "no positive rule set")
    if not positive.rules:
        return Decision(False, "the positive rule set is empty")
    hits = positive.true_rules(message, first=not all_hits)
    if not hits:
        return Decision(False, "no positive rule is TRUE")
    return Decision(True, f"positive rule {hits[0].name} is TRUE", hits[0], tuple(hits))


def explain(message: v.Message, rule_set: RuleSetSpec) -> list[tuple[str, bool | None]]:
    """Each rule's TRUE / FALSE / NULL for the message, in rule-set order ("test a message")."""
    return rule_set.explain(message)
