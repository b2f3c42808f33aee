"""Pages of the core app: the change log."""

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from core import selectors
from core.filtersets import ChangeLogFilterSet
from core.generic import ObjectListView, require
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
