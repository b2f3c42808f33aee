"""Pages of the core app: the change log."""

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django_tables2 import RequestConfig

from core import selectors
from core.filtersets import ChangeLogFilterSet
from core.generic import BoundedPaginator, ObjectListView, require
from core.status import REGISTRY, table_class
from core.tables import ChangeLogTable


class ChangeLogListView(ObjectListView):
    title = "Change log"
    table_class = ChangeLogTable
    filterset_class = ChangeLogFilterSet
    selector = staticmethod(selectors.change_log_list)


def changelog_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, "view")
    entry = get_object_or_404(selectors.change_log_list(), pk=pk)
    return render(
        request,
        "core/changelog_detail.html",
        {
            "entry": entry,
            "before": json.dumps(entry.before, indent=2, sort_keys=True),
            "after": json.dumps(entry.after, indent=2, sort_keys=True),
        },
    )


def status_views(request: HttpRequest) -> HttpResponse:
    """Every registered Oracle-named status view (DBA_QUEUES, DBA_RULES, …) as a tab, read from
    its PostgreSQL view; the same rows are at /api/status/<view>/."""
    require(request, "view")
    names = sorted(REGISTRY, key=lambda n: (REGISTRY[n].app, n))
    view = request.GET.get("view", "dba_queues")
    if view not in REGISTRY:
        view = names[0]
    table = table_class(view)(REGISTRY[view].model.objects.all())
    RequestConfig(
        request, paginate={"per_page": 25, "paginator_class": BoundedPaginator}
    ).configure(table)
    return render(
        request,
        "core/status_views.html",
        {
            "table": table,
            "view": view,
            "current": REGISTRY[view],
            "views": [REGISTRY[n] for n in names],
        },
    )
