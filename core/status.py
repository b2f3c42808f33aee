"""Registry of the Oracle-named status views (DBA_QUEUES, DBA_RULES, …).

Each app registers its PostgreSQL views (unmanaged models) in ``AppConfig.ready``; one page and one
set of read-only API endpoints serve all of them, so a new view is one line in its app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import django_tables2 as tables
from django.db import models
from django.utils.html import format_html
from django.utils.safestring import SafeString
from rest_framework import serializers, viewsets


@dataclass(frozen=True)
class StatusView:
    name: str  # the PostgreSQL view's name, e.g. "dba_queues"
    model: type[models.Model]
    hidden: tuple[str, ...] = ()  # surrogate keys that are not Oracle columns
    app: str = ""
    description: str = field(default="", compare=False)
    # USER_ and ALL_ views: the rows the requesting (console) user may see, from all rows.
    for_user: Callable[[models.QuerySet, Any], models.QuerySet] | None = field(
        default=None, compare=False
    )

    def rows(self, user: Any) -> models.QuerySet:
        """The view's rows as ``user`` sees them (every row for a DBA_/V$ view)."""
        qs = self.model.objects.all()
        return self.for_user(qs, user) if self.for_user is not None else qs

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.model._meta.concrete_fields if f.name not in self.hidden]


REGISTRY: dict[str, StatusView] = {}


def register(*views: StatusView) -> None:
    for view in views:
        REGISTRY[view.name] = view


class OracleViewTable(tables.Table):
    """A status view's table: headers are Oracle's column names (QUEUE_TABLE, MAX_RETRIES), as a
    DBA reads them, not humanized field names."""

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        for bound in self.columns:  # each table holds its own copies of the columns
            bound.column.verbose_name = bound.name.upper()


class WrappedColumn(tables.Column):
    """A free-text or JSON column (a comment, an error, a rule condition): its text wraps at a
    readable width instead of stretching the table into one very wide line."""

    def render(self, value: Any) -> SafeString:
        return format_html('<div class="aq-wrap">{}</div>', value)


@cache
def table_class(name: str) -> type[tables.Table]:
    view = REGISTRY[name]
    meta = type(
        "Meta",
        (),
        {
            "model": view.model,
            "fields": tuple(view.columns),
            "sequence": tuple(view.columns),
            "attrs": {"class": "table table-sm table-hover align-middle"},
        },
    )
    wrapped = {
        column: WrappedColumn()
        for column in view.columns
        if isinstance(view.model._meta.get_field(column), models.TextField | models.JSONField)
    }
    return type(f"{view.model.__name__}Table", (OracleViewTable,), {"Meta": meta, **wrapped})


@cache
def serializer_class(name: str) -> type[serializers.ModelSerializer]:
    view = REGISTRY[name]
    meta = type("Meta", (), {"model": view.model, "fields": view.columns})
    return type(f"{view.model.__name__}Serializer", (serializers.ModelSerializer,), {"Meta": meta})


def viewset_class(name: str) -> type[viewsets.ReadOnlyModelViewSet]:
    view = REGISTRY[name]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return view.rows(self.request.user)

    return type(
        f"{view.model.__name__}ViewSet",
        (viewsets.ReadOnlyModelViewSet,),
        {
            "queryset": view.model.objects.all(),
            "get_queryset": get_queryset,
            "serializer_class": serializer_class(name),
            "__doc__": f"The {name} PostgreSQL view. {view.description}".strip(),
        },
    )
