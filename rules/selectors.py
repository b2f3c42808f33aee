"""Reads of the rules app, shared by pages and API."""

from django.db.models import Count, Prefetch, QuerySet

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
