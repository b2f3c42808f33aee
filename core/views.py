"""Pages of the core app: the change log."""

import json
import sys

import psycopg
from django.db import InterfaceError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.defaults import server_error as django_server_error
from django_tables2 import RequestConfig

from core import selectors
from core.api.exceptions import request_limit_error
from core.filtersets import ChangeLogFilterSet
from core.generic import BoundedPaginator, ObjectListView, partial_request, require
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
            "before": json.dumps(entry.before, indent=2, sort_keys=True, ensure_ascii=False),
            "after": json.dumps(entry.after, indent=2, sort_keys=True, ensure_ascii=False),
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
    table = table_class(view)(REGISTRY[view].rows(request.user))
    RequestConfig(
        request, paginate={"per_page": 25, "paginator_class": BoundedPaginator}
    ).configure(table)
    return render(
        request,
        # The table polls itself with the page's own URL (view, page, sort).
        "core/_status_table.html" if partial_request(request) else "core/status_views.html",
        {
            "table": table,
            "view": view,
            "current": REGISTRY[view],
            "views": [REGISTRY[n] for n in names],
        },
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's handler400: a request over a body limit, refused before any view saw it, answered
    413 naming the limit (JSON under /api/, a page elsewhere) instead of a bare "Bad Request"."""
    too_large = request_limit_error(exception)
    status = 413 if too_large else 400
    detail = too_large["detail"] if too_large else "The request could not be read."
    if request.path_info.startswith("/api/"):
        return JsonResponse(too_large or {"detail": detail, "code": "bad_request"}, status=status)
    return render(
        request,
        "core/request_refused.html",
        {"title": "Request refused", "detail": detail},
        status=status,
    )


FORBIDDEN_HINT = "Go back; if you need this, ask an administrator for a role that allows it."
CSRF_HINT = (
    "The form's security token was missing or stale (a page open across a log-in, or cookies "
    "refused). Reload the page and send it again."
)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """A refused request (a role without the capability) as a page in the console's layout;
    Django's handler403 and console.middleware.RefusalMiddleware's answer."""
    detail = str(exception or "") or "Your role does not allow this."
    return render(
        request,
        "core/request_refused.html",
        {"title": "Forbidden", "detail": detail, "hint": FORBIDDEN_HINT},
        status=403,
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the same page, saying what to do, instead of Django's bare one."""
    return render(
        request,
        "core/request_refused.html",
        {"title": "Forbidden", "detail": f"Request refused: {reason}.", "hint": CSRF_HINT},
        status=403,
    )


# The database being away is the one server-side failure a client can do something about: wait
# and send again. Said plainly, without a template (base.html's context needs the database).
_DB_AWAY = (
    "The database is not answering (restarting?). Try again shortly; a change sent just now may "
    "or may not have been applied."
)
_DB_AWAY_PAGE = (
    "<!doctype html><title>Database unavailable</title><h1>Database unavailable</h1><p>{}</p>"
)
# Connection exceptions (class 08) and the server shutting down or starting: the database is
# away. A deadlock, a serialization failure or a timeout is a fault to see as one (500).
_AWAY_STATES = ("08", "57P01", "57P02", "57P03")


def _database_away(exc: BaseException | None) -> bool:
    """True when ``exc`` (Django's wrapper or psycopg's own error, from the queue engine's raw
    connections) says the database cannot be reached."""
    while exc is not None:
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            state = exc.sqlstate  # None: no server answer at all (refused, reset, closed)
            return state is None or state.startswith(_AWAY_STATES)
        if isinstance(exc, InterfaceError) and exc.__cause__ is None:
            return True  # Django's own "connection already closed"
        exc = exc.__cause__
    return False


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's handler500, called inside the failed request's ``except``: the database being
    away is a 503 with Retry-After (JSON under /api/); anything else keeps Django's 500, in the
    API's error body under /api/."""
    api = request.path_info.startswith("/api/")
    if _database_away(sys.exc_info()[1]):
        if api:
            response: HttpResponse = JsonResponse(
                {"detail": _DB_AWAY, "code": "database_unavailable"}, status=503
            )
        else:
            response = HttpResponse(_DB_AWAY_PAGE.format(_DB_AWAY), status=503)
        response["Retry-After"] = "5"
        return response
    if api:
        return JsonResponse({"detail": "Server error.", "code": "server_error"}, status=500)
    return django_server_error(request)
