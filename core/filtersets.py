import django_filters
from django import forms
from django.db import models
from django_filters.widgets import BooleanWidget

from core.choices import ChangeAction
from core.models import ChangeLogEntry


class AnyBooleanWidget(BooleanWidget):
    """A yes/no filter whose empty choice reads "Any" (django-filter says "Unknown")."""

    def __init__(self, attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.choices = (("", "Any"), ("true", "Yes"), ("false", "No"))


class BaseFilterSet(django_filters.FilterSet):
    """Every list's FilterSet: booleans filter as Any / Yes / No."""

    class Meta:
        filter_overrides = {
            models.BooleanField: {
                "filter_class": django_filters.BooleanFilter,
                "extra": lambda f: {"widget": AnyBooleanWidget},
            }
        }


class ChangeLogFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(field_name="object_repr", lookup_expr="icontains", label="Object")
    username = django_filters.CharFilter(lookup_expr="iexact", label="User")
    action = django_filters.ChoiceFilter(choices=ChangeAction.choices)
    object_type = django_filters.CharFilter()
    verb = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(
        field_name="time",
        lookup_expr="gte",
        label="Since",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    class Meta(BaseFilterSet.Meta):
        model = ChangeLogEntry
        fields = ["q", "username", "action", "object_type", "verb", "since"]
