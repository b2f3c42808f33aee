from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import django_filters
from django import forms
from django.db import models
from django_filters.widgets import BooleanWidget

from core.choices import ChangeAction
from core.lookups import name_or_id_q
from core.models import ChangeLogEntry


class AnyBooleanWidget(BooleanWidget):
    """A yes/no filter whose empty choice reads "Any" (django-filter says "Unknown")."""

    def __init__(self, attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.choices = (("", "Any"), ("true", "Yes"), ("false", "No"))


# A number filter's value past this power of ten matches nothing a column holds (bigint and
# double precision included); Django's DecimalField would take 1e1000000.
MAX_NUMBER_EXPONENT = 18

# PostgreSQL's limit on a time zone displacement (Python takes up to ±24 h).
MAX_UTC_OFFSET = timedelta(hours=16)


class FilterForm(forms.Form):
    """The form of every FilterSet: a number is taken only up to 18 digits, a date-time only if
    PostgreSQL can compare with it.
    An offset past ±15:59 or a date that overflows once moved to UTC is refused on its field, so
    a list answers 400 naming the filter (API) or shows the filter's error (pages), never 500."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name, value in list(cleaned.items()):
            if isinstance(value, Decimal) and abs(value.adjusted()) > MAX_NUMBER_EXPONENT:
                # int(Decimal("1e1000000")) builds the whole number: a minute of one thread.
                self.add_error(name, f"Out of range: at most {MAX_NUMBER_EXPONENT} digits.")
                continue
            if not isinstance(value, datetime) or value.tzinfo is None:
                continue
            offset = value.utcoffset()
            if offset is not None and abs(offset) >= MAX_UTC_OFFSET:
                self.add_error(name, "The UTC offset is out of range: use -15:59 to +15:59.")
                continue
            try:
                cleaned[name] = value.astimezone(UTC)
            except OverflowError:
                self.add_error(name, "This date and time is out of range once moved to UTC.")
        return cleaned


class NameOrIdField(forms.ModelChoiceField):
    """A row chosen by its id or its name, typed in a text box. The default ``<select>`` lists
    every row on each render: 10,000 queues made a filter form of megabytes and seconds."""

    widget = forms.TextInput(attrs={"placeholder": "id or name"})

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        if isinstance(value, self.queryset.model):
            return value
        where = name_or_id_q(str(value))
        found = list(self.queryset.filter(where)[:2]) if where is not None else []
        if len(found) != 1:
            name = self.queryset.model._meta.verbose_name
            raise forms.ValidationError(
                f"No {name} has the id or name {str(value)[:200]!r}.", code="invalid_choice"
            )
        return found[0]


class NameOrIdFilter(django_filters.ModelChoiceFilter):
    """ModelChoiceFilter by id (as before) or name, whose form field never lists the rows."""

    field_class = NameOrIdField


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
