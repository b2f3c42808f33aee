"""What a client does with one message: decide, then transform (spec/rules.md §2.3, §4, §7.3).

``apply`` runs Table 5-1 (:func:`rules.lang.evaluate.decide`) and, only when a rule in the
positive rule set is TRUE, that rule's transformations in this order:

1. row migration, for subset rules (the ``STREAMS$_ROW_SUBSET`` action context, §3.5.4);
2. declarative transformations, row LCRs only, in execution order (:mod:`rules.lang.transform`);
3. the custom transformation, a registered Python callable; returning None discards.

Nothing runs on a DISCARD, so a rule in a negative rule set never transforms (Oracle ignores
transformations there), and with no positive rule set no rule fired, so there is nothing to run
(§4.1). Oracle applies one action context per message; here it is the first TRUE positive rule in
rule-set order (Oracle does not say which; design so that one rule with transformations can be
TRUE, §4.2).

An error inside a step (a custom callable that raises or returns something that is not a message)
raises TransformationError naming the rule: Oracle stops the capture or moves the transaction to
the error queue there, and the caller decides which of those it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from rules.lang import values as v
from rules.lang.evaluate import DISCARD, PERFORM, CompiledRule, RuleSetSpec, decide
from rules.lang.migration import MigrationError, row_migration, subsetting_operation_of
from rules.lang.transform import (
    CustomFunction,
    Declarative,
    TransformationError,
    apply_declarative,
    is_row_lcr,
    ordered,
)

__all__ = [
    "CUSTOM",
    "DECLARATIVE",
    "ROW_MIGRATION",
    "PipelineResult",
    "RuleTransforms",
    "Step",
    "apply",
    "apply_rules",
    "message_to_json",
    "run_transformations",
]

# Step kinds, named like DBA_STREAMS_TRANSFORMATIONS.TRANSFORM_TYPE.
ROW_MIGRATION = "SUBSET RULE"
DECLARATIVE = "DECLARATIVE TRANSFORMATION"
CUSTOM = "CUSTOM TRANSFORMATION"


@dataclass(frozen=True, eq=False)
class RuleTransforms:
    """Everything one rule does to a message it is TRUE for.

    ``action_context`` is the rule's (row migration reads ``STREAMS$_ROW_SUBSET`` from it);
    ``custom`` is the already-resolved callable (:func:`rules.lang.transform.resolve`), so this
    module never reads a registry."""

    action_context: Mapping[str, Any] = field(default_factory=dict)
    declarative: tuple[Declarative, ...] = ()
    custom: CustomFunction | None = None
    custom_name: str = ""

    @property
    def is_empty(self) -> bool:
        return (
            not self.declarative
            and self.custom is None
            and subsetting_operation_of(self.action_context) is None
        )


@dataclass(frozen=True)
class Step:
    """One transformation that ran: its kind, what it does, whether it changed the message."""

    kind: str
    detail: str
    changed: bool


@dataclass(frozen=True, eq=False)
class PipelineResult:
    """The outcome for one message: PERFORM with the message to pass on, or DISCARD (no message).
    ``rule`` is the rule that decided (a negative rule for a negative hit)."""

    action: str
    reason: str
    message_out: Any
    rule: CompiledRule | None = None
    steps: tuple[Step, ...] = ()

    @property
    def perform(self) -> bool:
        return self.action == PERFORM


Lookup = Callable[[str], RuleTransforms | None] | Mapping[str, RuleTransforms]


def _is_message(obj: Any) -> bool:
    return isinstance(obj, v.RowLCR | v.DdlLCR | v.UserMessage) or (
        isinstance(obj, Mapping) and "kind" in obj
    )


def run_transformations(
    message: Any, spec: RuleTransforms, *, rule_name: str = ""
) -> tuple[Any, tuple[Step, ...]]:
    """Row migration → declarative → custom for one message a rule was TRUE for. Returns the
    message to pass on (None when the custom transformation discarded it) and the steps run."""
    steps: list[Step] = []
    where = f" of rule {rule_name}" if rule_name else ""
    row = is_row_lcr(message)
    operation = subsetting_operation_of(spec.action_context)
    if row and operation is not None:
        try:
            out = row_migration(message, action_context=spec.action_context)
        except MigrationError as exc:
            raise TransformationError(f"Row migration{where}: {exc}") from exc
        before = _get(message, "command_type")
        after = _get(out, "command_type")
        detail = f"{operation} rule: {before}" + (f" → {after}" if after != before else "")
        steps.append(Step(ROW_MIGRATION, detail, out is not message))
        message = out
    if row and spec.declarative:
        origin = (_get(message, "object_owner"), _get(message, "object_name"))
        for t in ordered(spec.declarative):
            out = apply_declarative(message, t, origin=origin)
            steps.append(Step(DECLARATIVE, t.describe(), out is not message))
            message = out
    if spec.custom is not None:
        name = spec.custom_name or getattr(spec.custom, "__name__", "custom")
        try:
            out = spec.custom(message)
        except Exception as exc:
            raise TransformationError(
                f"Custom transformation {name}{where} failed: {exc!r}"
            ) from exc
        if out is not None and not _is_message(out):
            raise TransformationError(
                f"Custom transformation {name}{where} returned {type(out).__name__}, "
                "not a message or None."
            )
        steps.append(Step(CUSTOM, name, out is not message))
        message = out
    return message, tuple(steps)


def _get(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name, None)


def apply(
    message: Any,
    *,
    positive: RuleSetSpec | None,
    negative: RuleSetSpec | None,
    transformations_for: Lookup,
) -> PipelineResult:
    """Decide for ``message`` and, on a positive rule's hit, run that rule's transformations.
    ``transformations_for`` maps a rule name to its :class:`RuleTransforms` (or None for a rule
    without any); it is a callable or a mapping."""
    decision = decide(message, positive=positive, negative=negative)
    if not decision.perform:
        return PipelineResult(DISCARD, decision.reason, None, decision.rule)
    rule = decision.rule
    if rule is None:  # no positive rule set: performed, but no rule fired to transform
        return PipelineResult(PERFORM, decision.reason, message)
    lookup = (
        transformations_for.get if isinstance(transformations_for, Mapping) else transformations_for
    )
    spec = lookup(rule.name)
    if spec is None or spec.is_empty:
        return PipelineResult(PERFORM, decision.reason, message, rule)
    out, steps = run_transformations(message, spec, rule_name=rule.name)
    if out is None:
        return PipelineResult(
            DISCARD,
            f"{decision.reason}; custom transformation {steps[-1].detail} discarded the message",
            None,
            rule,
            steps,
        )
    return PipelineResult(PERFORM, decision.reason, out, rule, steps)


# The name the clients' code reads best with: ``apply_rules(message, positive=…, …)``.
apply_rules = apply


def message_content(message: Any, *, type_name: str | None) -> tuple[str, str | None, Any]:
    """(kind, type name, payload) of a transformed message as a queue stores it: a user message
    keeps the original type name unless the transformation set one; a change record is stored
    as its JSON object without ``kind``. Propagation runs and Spark jobs both copy this way."""
    j = message_to_json(message)
    k = str(j.get("kind", "user")).upper() if isinstance(j, dict) else "USER"
    if k == "USER":
        return "USER", j.get("type_name") or type_name, j.get("payload")
    return k, type_name, {key: val for key, val in j.items() if key != "kind"}


def message_to_json(message: Any) -> Any:
    """A message in the JSON shape ``message_from_json`` reads (RAW as hex, dates as ISO text,
    NUMBERs as JSON numbers when exact, else as text)."""
    if message is None or isinstance(message, Mapping):
        return _json_value(message)
    if isinstance(message, v.UserMessage):
        return {
            "kind": "user",
            "type_name": message.type_name,
            "payload": _json_value(message.payload),
        }
    out: dict[str, Any] = {"kind": message.kind}
    names = ("source_database_name", "command_type", "object_owner", "object_name")
    if isinstance(message, v.DdlLCR):
        names = (
            *names,
            "object_type",
            "base_table_owner",
            "base_table_name",
            "ddl_text",
        )
    for name in names:
        out[name] = getattr(message, name)
    out["tag"] = message.tag.hex().upper() if message.tag is not None else None
    if isinstance(message, v.RowLCR):
        out["old_values"] = _json_value(message.old_values)
        out["new_values"] = _json_value(message.new_values)
    return out


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, Decimal):
        f = float(value)
        return f if Decimal(repr(f)) == value else v.number_to_text(value)
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, datetime):
        return v.date_to_text(value)
    if isinstance(value, v.Struct):
        return {k: _json_value(x) for k, x in value.exact.items()}
    if isinstance(value, Mapping):
        return {str(k): _json_value(x) for k, x in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(x) for x in value]
    return str(value)
