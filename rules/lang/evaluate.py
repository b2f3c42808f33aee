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


def _bindings(
    message: v.Message, user_variables: Iterable[str], also: RuleSetSpec | None = None
) -> dict[str, Any]:
    kind = message.kind
    if kind == v.ROW_LCR:
        return {"DML": message}
    if kind == v.DDL_LCR:
        return {"DDL": message}
    names = set(user_variables) | (also.user_variables if also is not None else set())
    b = {name: message for name in names if name not in ("DML", "DDL")}
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
    """Rules filed under the same accessors: key → rule positions."""

    def __init__(self, accessors: tuple[Expr, ...]) -> None:
        self.accessors = accessors
        self.table: dict[Any, list[int]] = {}
        self.numbers = [False] * len(accessors)  # an accessor holding number constants
        self._fns = [compile_expr(a) for a in accessors]
        self._attr = [index_accessor(a) == "attr" for a in accessors]
        # Member functions of one variable: a single attrgetter reads the key straight from the
        # record (a scalar key for one field, a tuple for several).
        self.var: str | None = None
        self.getter: Callable[[Any], Any] | None = None
        vars_ = {a.expr.name for a in accessors if isinstance(a, Call) and a.expr is not None}
        if not any(self._attr) and len(vars_) == 1:
            self.var = vars_.pop()
            self.getter = attrgetter(*(v.LCR_FIELDS[a.name] for a in accessors))  # type: ignore[union-attr]

    def add(self, alternative: Mapping[Expr, Any], position: int) -> None:
        forms = []
        for i, acc in enumerate(self.accessors):
            c = alternative[acc]
            if self._attr[i]:
                forms.append(v.value_keys(c))
                self.numbers[i] |= type(c) is not str
            else:
                forms.append((c,))
        for key in product(*forms):
            if self.getter is not None and len(key) == 1:
                key = key[0]
            bucket = self.table.setdefault(key, [])
            if not bucket or bucket[-1] != position:
                bucket.append(position)

    def generic_keys(self, b: Bindings) -> Iterable[tuple[Any, ...]]:
        forms = []
        for fn, is_attr, numbers in zip(self._fns, self._attr, self.numbers, strict=True):
            x = fn(b)
            if is_attr:
                f = _key_forms(x, numbers)
                if not f:
                    return ()
                forms.append(f)
            elif x is None:
                return ()
            else:
                forms.append((x,))
        return product(*forms)

    def probe(self) -> tuple[str | None, Callable | None, dict[Any, list[int]], Callable | None]:
        if self.getter is not None:
            return self.var, self.getter, self.table, None
        return None, None, self.table, self.generic_keys


def _index(rules: list[tuple[int, CompiledRule]]) -> tuple[list[int], list[_Signature]]:
    """The rules of one message kind: those filed by their equality predicates, and those always
    evaluated."""
    always: list[int] = []
    by_sig: dict[tuple[Expr, ...], _Signature] = {}
    for position, rule in rules:
        alternatives = equality_keys(rule.condition)
        if alternatives is None:
            always.append(position)
            continue
        for alt in alternatives:  # an empty list: the rule can never be TRUE
            accessors = tuple(sorted(alt, key=repr))
            sig = by_sig.get(accessors)
            if sig is None:
                sig = by_sig[accessors] = _Signature(accessors)
            sig.add(alt, position)
    return always, list(by_sig.values())


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
        self._fns = tuple(r.fn for r in self.rules)
        buckets: dict[str, list[tuple[int, CompiledRule]]] = {}
        for i, rule in enumerate(self.rules):
            key = rule.applies_to or "*"
            if key.startswith("user:"):
                key = "user:" + key[5:].upper()
            buckets.setdefault(key, []).append((i, rule))
        self._indexes = {k: _index(rs) for k, rs in buckets.items()}
        self._plans: dict[str, tuple[list[int], tuple]] = {}
        self._decisions: dict[tuple[int, bool], Decision] = {}

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

    def _plan(self, message: v.Message) -> tuple[list[int], tuple]:
        """For one kind of message: the rules always evaluated, and the index probes."""
        key = message.kind
        if key == v.USER:
            key = "user:" + message.type_name.upper()  # type: ignore[union-attr]
        plan = self._plans.get(key)
        if plan is None:
            names = [message.kind, "*"] + ([key] if message.kind == v.USER else [])
            parts = [self._indexes[n] for n in names if n in self._indexes]
            if not self.indexed:
                always = sorted(i for i, r in enumerate(self.rules) if r.applies(message))
                plan = (always, ())
            else:
                always = sorted(i for a, _ in parts for i in a)
                plan = (always, tuple(sig.probe() for _, sigs in parts for sig in sigs))
            if len(self._plans) < 1024:  # user types come from messages: bound the cache
                self._plans[key] = plan
        return plan

    def candidates(self, message: v.Message, b: Bindings | None = None) -> list[int]:
        """Positions of the rules that may be TRUE for the message, in rule-set order."""
        if b is None:
            b = self.bindings(message)
        always, probes = self._plan(message)
        lists = [always] if always else []
        for var, getter, table, generic in probes:
            if generic is None:
                o = b.get(var)
                if o is None:
                    continue
                try:
                    hit = table.get(getter(o))
                except AttributeError:  # a record without the field
                    continue
                if hit is not None:
                    lists.append(hit)
            else:
                for key in generic(b):
                    hit = table.get(key)
                    if hit is not None:
                        lists.append(hit)
        if len(lists) == 1:
            return lists[0]
        if not lists:
            return lists  # type: ignore[return-value]
        return sorted({i for lst in lists for i in lst})

    def first_true(self, message: v.Message, b: Bindings | None = None) -> int | None:
        """The position of the first rule (in rule-set order) that is TRUE, or None."""
        if b is None:
            b = self.bindings(message)
        fns = self._fns
        for i in self.candidates(message, b):
            if fns[i](b) is True:
                return i
        return None

    def true_rules(
        self, message: v.Message, *, first: bool = False, b: Bindings | None = None
    ) -> list[CompiledRule]:
        """The rules that are TRUE for the message (only the first, in rule-set order, when
        ``first``)."""
        if b is None:
            b = self.bindings(message)
        if first:
            i = self.first_true(message, b)
            return [] if i is None else [self.rules[i]]
        fns = self._fns
        return [self.rules[i] for i in self.candidates(message, b) if fns[i](b) is True]

    def explain(self, message: v.Message) -> list[tuple[str, bool | None]]:
        """Every rule's value for the message (NULL for rules that do not apply to it)."""
        b = self.bindings(message)
        return [(r.name, r.fn(b) if r.applies(message) else None) for r in self.rules]

    def _decision(self, position: int, positive: bool) -> Decision:
        # Decisions are immutable: one per deciding rule, made once.
        d = self._decisions.get((position, positive))
        if d is None:
            rule = self.rules[position]
            which = "positive" if positive else "negative"
            d = Decision(
                positive, f"{which} rule {rule.name} is TRUE", rule, (rule,) if positive else ()
            )
            self._decisions[(position, positive)] = d
        return d


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


_NO_POSITIVE_SET = Decision(True, "no positive rule set")
_EMPTY_POSITIVE_SET = Decision(False, "the positive rule set is empty")
_NO_POSITIVE_HIT = Decision(False, "no positive rule is TRUE")


def decide(
    message: v.Message,
    *,
    positive: RuleSetSpec | None,
    negative: RuleSetSpec | None,
    all_hits: bool = False,
) -> Decision:
    """Table 5-1: negative set first, then the positive set. ``hits`` holds the TRUE positive
    rules (the first only, unless ``all_hits``), whose action contexts the client applies."""
    b = None
    if negative is not None and negative.rules:
        b = _bindings(message, negative.user_variables, positive)
        i = negative.first_true(message, b)
        if i is not None:
            return negative._decision(i, False)
    if positive is None:
        return _NO_POSITIVE_SET
    if not positive.rules:
        return _EMPTY_POSITIVE_SET
    if b is None:
        b = _bindings(message, positive.user_variables)
    if all_hits:
        hits = positive.true_rules(message, b=b)
        if not hits:
            return _NO_POSITIVE_HIT
        return Decision(True, f"positive rule {hits[0].name} is TRUE", hits[0], tuple(hits))
    i = positive.first_true(message, b)
    return _NO_POSITIVE_HIT if i is None else positive._decision(i, True)


def explain(message: v.Message, rule_set: RuleSetSpec) -> list[tuple[str, bool | None]]:
    """Each rule's TRUE / FALSE / NULL for the message, in rule-set order ("test a message")."""
    return rule_set.explain(message)
