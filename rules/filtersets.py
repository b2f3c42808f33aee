import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import BaseFilterSet
from rules.choices import Classification, RuleType, StreamsRuleType
from rules.models import EvaluationContext, Rule, RuleSet


class RuleFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    streams_rule_type = django_filters.ChoiceFilter(
        choices=StreamsRuleType.choices, label="Generated as"
    )
    rule_type = django_filters.ChoiceFilter(choices=RuleType.choices)
    classification = django_filters.ChoiceFilter(choices=Classification.choices)
    rule_set = django_filters.ModelChoiceFilter(
        field_name="rule_sets", queryset=RuleSet.objects.all(), label="Rule set"
    )

    class Meta(BaseFilterSet.Meta):
        model = Rule
        fields = ["q", "streams_rule_type", "rule_type", "classification", "rule_set"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value) | Q(condition__icontains=value) | Q(comment__icontains=value)
        )


class RuleSetFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Search")
    evaluation_context = django_filters.ModelChoiceFilter(queryset=EvaluationContext.objects.all())

    class Meta(BaseFilterSet.Meta):
        model = RuleSet
        fields = ["q", "evaluation_context"]


class EvaluationContextFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Search")

    class Meta(BaseFilterSet.Meta):
        model = EvaluationContext
        fields = ["q"]
