"""One FilterSet per gateway list, used by the page and the API viewset alike."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import BaseFilterSet
from gateway.choices import AgentStatus, Direction, Domain, JobStatus, LinkType
from gateway.models import Agent, ForeignQueue, Job, Link


class AgentFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    status = django_filters.MultipleChoiceFilter(choices=AgentStatus.choices, label="Status")

    class Meta(BaseFilterSet.Meta):
        model = Agent
        fields = ["q", "status"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value) | Q(comment__icontains=value) | Q(instance__icontains=value)
        )


class LinkFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    link_type = django_filters.ChoiceFilter(choices=LinkType.choices, empty_label="Any type")
    agent = django_filters.ModelChoiceFilter(queryset=Agent.objects.all())

    class Meta(BaseFilterSet.Meta):
        model = Link
        fields = ["q", "link_type", "agent"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(Q(name__icontains=value) | Q(comment__icontains=value))


class ForeignQueueFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    link = django_filters.ModelChoiceFilter(queryset=Link.objects.all())
    link_type = django_filters.ChoiceFilter(
        field_name="link__link_type", choices=LinkType.choices, empty_label="Any type"
    )
    domain = django_filters.ChoiceFilter(choices=Domain.choices, empty_label="Any domain")

    class Meta(BaseFilterSet.Meta):
        model = ForeignQueue
        fields = ["q", "link", "link_type", "domain"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value)
            | Q(provider_queue__icontains=value)
            | Q(comment__icontains=value)
        )


class JobFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    agent = django_filters.ModelChoiceFilter(
        field_name="link__agent", queryset=Agent.objects.all(), label="Agent"
    )
    link = django_filters.ModelChoiceFilter(queryset=Link.objects.all())
    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, label="Status")
    direction = django_filters.ChoiceFilter(
        choices=[(d.value, d.name.title()) for d in Direction], empty_label="Any direction"
    )

    class Meta(BaseFilterSet.Meta):
        model = Job
        fields = ["q", "agent", "link", "status", "enabled", "direction"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value)
            | Q(source_queue__name__icontains=value)
            | Q(destination_queue__name__icontains=value)
            | Q(source_foreign__name__icontains=value)
            | Q(destination_foreign__name__icontains=value)
            | Q(comment__icontains=value)
        )
