"""One FilterSet per sites list, used by the page and the API viewset alike."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import BaseFilterSet
from sites.choices import SslMode
from sites.models import DatabaseLink


class DatabaseLinkFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    sslmode = django_filters.ChoiceFilter(
        choices=SslMode.choices, empty_label="Any TLS mode", label="TLS mode"
    )

    class Meta(BaseFilterSet.Meta):
        model = DatabaseLink
        fields = ["q", "sslmode"]

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Q(name__icontains=value)
            | Q(host__icontains=value)
            | Q(database__icontains=value)
            | Q(remote_global_name__icontains=value)
            | Q(comment__icontains=value)
        )
