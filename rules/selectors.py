"""Reads of the rules app, shared by pages and API."""

from typing import TYPE_CHECKING, Any

from django.db.models import Count, Prefetch, QuerySet

from core.exceptions import DomainError
from rules.models import (
    CustomTransformation,
    DeclarativeTransformation,
    EvaluationContext,
    Rule,
    RuleSet,
    RuleSetRule,
)

if TYPE_CHECKING:  # the engine is imported where it runs, as the other selectors do
    from rules.lang.pipeline import RuleTransforms


def rule_list() -> QuerySet[Rule]:
    return (
        Rule.objects.select_related("evaluation_context", "owner")
        .annotate(rule_set_count=Count("memberships", distinct=True))
        .order_by("name")
    )


def rule_set_list() -> QuerySet[RuleSet]:
    return (
        RuleSet.objects.select_related("evaluation_context", "owner")
        .annotate(rule_count=Count("members", distinct=True))
        .order_by("name")
    )


def rule_set_members(rule_set: RuleSet) -> QuerySet[RuleSetRule]:
    return rule_set.members.select_related("rule", "rule__evaluation_context")


def evaluation_context_list() -> QuerySet[EvaluationContext]:
    return (
        EvaluationContext.objects.prefetch_related("variables")
        .annotate(rule_count=Count("rules", distinct=True))
        .order_by("name")
    )


def rule_set_with_rules(pk: int) -> RuleSet:
    members = RuleSetRule.objects.select_related("rule", "rule__evaluation_context")
    return RuleSet.objects.prefetch_related(Prefetch("members", queryset=members)).get(pk=pk)


def condition_report(condition: str, context: EvaluationContext | None) -> dict[str, Any]:
    """The condition check as data, for the API and the condition editor alike."""
    from rules.services import condition_check

    try:
        _, classification = condition_check(condition, evaluation_context=context)
    except DomainError as exc:
        return {
            "valid": False,
            "classification": None,
            "error": exc.message,
            "line": exc.extra.get("line"),
            "column": exc.extra.get("column"),
            "expected": exc.extra.get("expected"),
        }
    return {
        "valid": True,
        "classification": classification,
        "error": None,
        "line": None,
        "column": None,
        "expected": None,
    }


# --- evaluation ("test a message") ---------------------------------------------------------------

_SPEC_CACHE: dict[tuple[int, str], Any] = {}


def rule_set_spec(rule_set: RuleSet) -> Any:
    """The rule set compiled for evaluation, cached until the set (or one of its rules) changes:
    every membership or rule change bumps ``RuleSet.updated``."""
    from rules.lang import RuleSetSpec, compile_rule

    key = (rule_set.pk, rule_set.updated.isoformat())
    spec = _SPEC_CACHE.get(key)
    if spec is None:
        members = rule_set.members.filter(enabled=True).select_related(
            "rule", "rule__evaluation_context"
        )
        compiled = []
        for m in members:
            # A rule without a context of its own is evaluated in the set's (ADD_RULE).
            ctx = m.rule.evaluation_context or rule_set.evaluation_context
            compiled.append(
                compile_rule(
                    m.rule.name,
                    m.rule.condition,
                    variables=ctx.variable_kinds() if ctx is not None else None,
                )
            )
        spec = RuleSetSpec(compiled, name=rule_set.name)
        if len(_SPEC_CACHE) > 256:
            _SPEC_CACHE.clear()
        _SPEC_CACHE[key] = spec
    return spec


def message_for_test(message: Any) -> Any:
    """A message to try rules on, from pasted JSON (``{"kind": "row_lcr" | "ddl_lcr" | "user",
    …}``). Queued messages are tried from the queue's side (queues depends on rules, not the
    reverse)."""
    from rules.lang import MessageError, message_from_json

    try:
        return message_from_json(message)
    except MessageError as exc:
        field = f"message.{exc.field}" if getattr(exc, "field", None) else "message"
        raise DomainError(str(exc), field=field) from exc


def rule_test(rule: Rule, message: Any) -> dict[str, Any]:
    """One rule's TRUE / FALSE / NULL for the message."""
    from rules.lang import compile_rule

    ctx = rule.evaluation_context
    compiled = compile_rule(
        rule.name, rule.condition, variables=ctx.variable_kinds() if ctx is not None else None
    )
    return {
        "rule": rule.name,
        "result": _tri(compiled.evaluate(message)),
        "applies": compiled.applies(message),
    }


def rule_set_decide(
    message: Any, *, positive: RuleSet | None, negative: RuleSet | None
) -> dict[str, Any]:
    """Table 5-1 for the message, with every rule's value in both sets."""
    from rules.lang import decide

    pos = rule_set_spec(positive) if positive is not None else None
    neg = rule_set_spec(negative) if negative is not None else None
    decision = decide(message, positive=pos, negative=neg)
    return {
        "decision": decision.action,
        "reason": decision.reason,
        "negative": [{"rule": n, "result": _tri(r)} for n, r in neg.explain(message)]
        if neg is not None
        else None,
        "positive": [{"rule": n, "result": _tri(r)} for n, r in pos.explain(message)]
        if pos is not None
        else None,
    }


def _tri(value: bool | None) -> str:
    return "NULL" if value is None else ("TRUE" if value else "FALSE")


# --- rule-based transformations ------------------------------------------------------------------


def rule_transformations(rule: Rule) -> list[DeclarativeTransformation]:
    """The rule's declarative transformations in execution order (step number, then Oracle's
    default order, then as added): the order the pipeline runs them in."""
    from rules.lang.transform import DEFAULT_ORDER

    rank = {t: i for i, t in enumerate(DEFAULT_ORDER)}
    rows = list(rule.transformations.all())
    return sorted(rows, key=lambda t: (t.step_number, rank.get(t.declarative_type, 99), t.pk))


def rule_transforms_spec(rule: Rule, *, registry: dict[str, str] | None = None) -> "RuleTransforms":
    """What ``rules.lang.pipeline`` needs to transform for ``rule``: its action context (row
    migration), its declarative transformations, and its custom callable resolved from the
    registry (AQ_TRANSFORMATIONS). Column transformations are scoped to the rule's table when the
    rule names one. A custom name the registry no longer holds is a DomainError on ``function``."""
    from rules.lang.pipeline import RuleTransforms
    from rules.lang.transform import Declarative, TransformationError, resolve
    from rules.services import transformation_registry

    table = (
        f"{rule.schema_name}.{rule.object_name}" if rule.schema_name and rule.object_name else None
    )
    declarative = tuple(Declarative.from_stored(t, table=table) for t in rule_transformations(rule))
    custom, custom_name = None, ""
    try:
        row = rule.custom_transform
    except CustomTransformation.DoesNotExist:
        row = None
    if row is not None:
        custom_name = row.function
        try:
            custom = resolve(
                custom_name, registry if registry is not None else transformation_registry()
            )
        except TransformationError as exc:
            raise DomainError(f"Rule {rule.name}: {exc.message}", field="function") from exc
    return RuleTransforms(
        action_context=dict(rule.action_context or {}),
        declarative=declarative,
        custom=custom,
        custom_name=custom_name,
    )


def rule_set_transformations(rule_set: RuleSet) -> dict[str, "RuleTransforms"]:
    """Rule name → its ``RuleTransforms``, for the enabled rules of the set that transform
    anything (row migration, declarative or custom): ``transformations_for`` of the pipeline."""
    from rules.services import transformation_registry

    registry = transformation_registry()
    rules = (
        Rule.objects.filter(memberships__rule_set=rule_set, memberships__enabled=True)
        .select_related("custom_transform")
        .prefetch_related("transformations")
    )
    specs = {r.name: rule_transforms_spec(r, registry=registry) for r in rules}
    return {name: spec for name, spec in specs.items() if not spec.is_empty}


def rule_set_apply(
    message: Any, *, positive: RuleSet | None, negative: RuleSet | None
) -> dict[str, Any]:
    """Dry run of what a client with these rule sets does with the message: the Table 5-1
    decision and, on a positive hit, the message after row migration, declarative and custom
    transformations, with each step. Nothing is written."""
    from rules.lang.pipeline import apply, message_to_json
    from rules.lang.transform import TransformationError

    pos = rule_set_spec(positive) if positive is not None else None
    neg = rule_set_spec(negative) if negative is not None else None
    specs = rule_set_transformations(positive) if positive is not None else {}
    try:
        result = apply(message, positive=pos, negative=neg, transformations_for=specs)
    except TransformationError as exc:
        raise DomainError(str(exc), field="message") from exc
    return {
        "decision": result.action,
        "reason": result.reason,
        "rule": result.rule.name if result.rule is not None else None,
        "message_in": message_to_json(message),
        "message_out": message_to_json(result.message_out),
        "steps": [{"kind": s.kind, "detail": s.detail, "changed": s.changed} for s in result.steps],
    }


def rule_transformation_summary(rule: Rule) -> dict[str, Any]:
    """What the rule does to a message it is TRUE for, in execution order: row migration (subset
    rules), declarative transformations, the custom transformation's registered name."""
    from rules.lang.migration import MigrationError, subsetting_operation_of

    try:
        # The action context is what the pipeline migrates by (§3.5.4), so it is what we show.
        operation = subsetting_operation_of(rule.action_context)
    except MigrationError:
        operation = None
    try:
        custom = rule.custom_transform.function
    except CustomTransformation.DoesNotExist:
        custom = None
    return {
        "subsetting_operation": str(operation) if operation is not None else None,
        "declarative": rule_transformations(rule),
        "custom": custom,
    }


def rule_set_sql(rule_set: RuleSet, *, prefix: str) -> tuple[str, dict[str, Any]] | None:
    """The rule set as one SQL boolean over ``aq_message m`` that is TRUE when any enabled rule is
    TRUE (never NULL; FALSE for an empty set), for clients that decide in PostgreSQL. None when
    a rule cannot be compiled to SQL; the caller then decides in Python."""
    from rules.lang import ConditionError, parse
    from rules.lang.compile_sql import compile_sql

    members = rule_set.members.filter(enabled=True).select_related(
        "rule", "rule__evaluation_context"
    )
    parts: list[str] = []
    params: dict[str, Any] = {}
    for i, m in enumerate(members):
        ctx = m.rule.evaluation_context or rule_set.evaluation_context
        try:
            expr = compile_sql(
                parse(m.rule.condition),
                alias="m",
                variables=ctx.variable_kinds() if ctx is not None else None,
                param_prefix=f"{prefix}{i}_",
                message_properties=True,  # the engine's rows: origin site and tag columns
            )
        except (ConditionError, ValueError, NotImplementedError):
            return None
        parts.append(f"(({expr.sql}) IS TRUE)")
        params.update(expr.params)
    return (" OR ".join(parts) if parts else "FALSE"), params
