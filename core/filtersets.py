import django_filters

from core.choices import ChangeAction
from core.models import ChangeLogEntry


class ChangeLogFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(field_name="object_repr", lookup_expr="icontains", label="Object")
    username = django_filters.CharFilter(lookup_expr="iexact")
    action = django_filters.ChoiceFilter(choices=ChangeAction.choices)
    object_type = django_filters.CharFilter()
    verb = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="time", lookup_expr="gte")

    class Meta:
        model = ChangeLogEntry
        fields = ["q", "username", "action", "object_type", "verb", "since"]
