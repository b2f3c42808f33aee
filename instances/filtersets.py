"""One FilterSet for the instances list, used by the page and the API viewset alike."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import BaseFilterSet
from instances.choices import InstanceStatus
from instances.models import Instance


class InstanceFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    status = django_filters.ChoiceFilter(
        choices=InstanceStatus.choices, empty_label="Any status", method="by_status", label="Status"
    )

    class Meta(BaseFilterSet.Meta):
        model = Instance
        fields = ["q", "status"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(Q(name__icontains=value) | Q(host__icontains=value))

    def by_status(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(status=value)  # the selector's annotation
