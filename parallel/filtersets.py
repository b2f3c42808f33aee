"""One FilterSet for the logical-queue list, used by the page and the API viewset alike."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import BaseFilterSet
from parallel.models import LogicalQueue


class LogicalQueueFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")

    class Meta(BaseFilterSet.Meta):
        model = LogicalQueue
        fields = ["q"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """By the logical queue's name or comment, or a partition's queue name or purpose."""
        return queryset.filter(
            Q(name__icontains=value)
            | Q(comment__icontains=value)
            | Q(partitions__queue__name__icontains=value)
            | Q(partitions__purpose__icontains=value)
        ).distinct()
