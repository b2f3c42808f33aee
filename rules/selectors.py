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
