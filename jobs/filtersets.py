"""One FilterSet per list, used by the page and the API viewset alike."""

import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import AnyBooleanWidget, BaseFilterSet, NameOrIdFilter
from jobs.choices import RunState, ScheduleState, SparkJobState, SparkMode
from jobs.models import Propagation, PropagationRun, SparkJob
from queues.models import Queue
from rules.models import RuleSet


class PropagationFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    state = django_filters.MultipleChoiceFilter(choices=ScheduleState.choices, label="State")
    # Queues by id or name in a text box: a select would list every queue (NameOrIdField).
    source_queue = NameOrIdFilter(queryset=Queue.objects.all())
    destination_queue = NameOrIdFilter(queryset=Queue.objects.all())
    queue = NameOrIdFilter(
        queryset=Queue.objects.all(), method="either_queue", label="Source or destination"
    )
    rule_set = django_filters.ModelChoiceFilter(
        queryset=RuleSet.objects.all(), method="either_rule_set", label="Rule set"
    )
    has_backlog = django_filters.BooleanFilter(
        method="backlog_filter", label="Has a backlog", widget=AnyBooleanWidget
    )
    failing = django_filters.BooleanFilter(
        method="failing_filter", label="Has failures", widget=AnyBooleanWidget
    )

    class Meta(BaseFilterSet.Meta):
        model = Propagation
        fields = [
            "q",
            "state",
            "source_queue",
            "destination_queue",
            "queue",
            "rule_set",
            "enabled",
            "has_backlog",
            "failing",
        ]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value)
            | Q(source_queue__name__icontains=value)
            | Q(destination_queue__name__icontains=value)
            | Q(comment__icontains=value)
        )

    def either_queue(self, queryset: QuerySet, name: str, value: Queue) -> QuerySet:
        return queryset.filter(Q(source_queue=value) | Q(destination_queue=value))

    def either_rule_set(self, queryset: QuerySet, name: str, value: RuleSet) -> QuerySet:
        return queryset.filter(Q(positive_rule_set=value) | Q(negative_rule_set=value))

    def backlog_filter(self, queryset: QuerySet, name: str, value: bool) -> QuerySet:
        return queryset.filter(backlog__gt=0) if value else queryset.filter(backlog=0)

    def failing_filter(self, queryset: QuerySet, name: str, value: bool) -> QuerySet:
        return (
            queryset.filter(schedule__failures__gt=0)
            if value
            else queryset.exclude(schedule__failures__gt=0)
        )


class PropagationRunFilterSet(BaseFilterSet):
    state = django_filters.MultipleChoiceFilter(choices=RunState.choices, label="State")
    propagation = django_filters.ModelChoiceFilter(queryset=Propagation.objects.all())
    worker = django_filters.CharFilter(lookup_expr="icontains")
    failed = django_filters.BooleanFilter(
        method="failed_filter", label="Failed", widget=AnyBooleanWidget
    )

    class Meta(BaseFilterSet.Meta):
        model = PropagationRun
        fields = ["state", "propagation", "worker", "failed"]

    def failed_filter(self, queryset: QuerySet, name: str, value: bool) -> QuerySet:
        return (
            queryset.filter(state=RunState.FAILED)
            if value
            else queryset.exclude(state=RunState.FAILED)
        )


class SparkJobFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    state = django_filters.MultipleChoiceFilter(choices=SparkJobState.choices, label="State")
    # The short names (Copy, Move): the choices' long labels explain them on the submit form.
    mode = django_filters.ChoiceFilter(
        choices=[(m.value, m.name.title()) for m in SparkMode], empty_label="Any"
    )
    source_queue = django_filters.ModelChoiceFilter(queryset=Queue.objects.all())
    submitted_by = django_filters.CharFilter(lookup_expr="iexact", label="Submitted by")

    class Meta(BaseFilterSet.Meta):
        model = SparkJob
        fields = ["q", "state", "mode", "dry_run", "source_queue", "submitted_by"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value) | Q(app_id__icontains=value) | Q(source_name__icontains=value)
        )
