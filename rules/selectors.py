"""Reads of the rules app, shared by pages and API."""

from typing import Any

from django.db.models import Count, Prefetch, QuerySet

from core.exceptions import DomainError
from rules.models import EvaluationContext, Rule, RuleSet, RuleSetRule


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
            ctx = m.rule.evaluation_context
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
