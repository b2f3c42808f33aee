from datetime import UTC, date, datetime
from typing import Any

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


class FilterForm(forms.Form):
    """The form of every FilterSet: a date-time is taken only if PostgreSQL can compare with it.
    Python parses offsets up to ±24 h (PostgreSQL takes ±15:59) and dates that overflow once
    moved to UTC; both are refused on the field, so a list answers 400 (API) or ignores the
    filter with its error shown (pages), never 500."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name, value in list(cleaned.items()):
            if isinstance(value, datetime) and value.tzinfo is not None:
                try:
                    cleaned[name] = value.astimezone(UTC)
                except OverflowError:
                    self.add_error(name, "This date and time is out of range.")
            elif isinstance(value, date) and not isinstance(value, datetime):
                if value.year in (1, 9999):  # the edges overflow in any time zone but UTC
                    self.add_error(name, "This date is out of range.")
        return cleaned


class BaseFilterSet(django_filters.FilterSet):
    """Every list's FilterSet: booleans filter as Any / Yes / No; date-times checked (FilterForm)."""

    def get_form_class(self) -> type[forms.Form]:
        form_class = super().get_form_class()
        if issubclass(form_class, FilterForm):
            return form_class
        return type(form_class.__name__, (FilterForm, form_class), {})

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
