"""View plumbing shared by every app's pages: capability checks, list pages (their filter form is
templates/core/_filter_form.html, their table core/_table.html), row buttons, service forms,
"are you sure?" pages, and the one check of a partial (HTMX) request."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django_filters.views import FilterView
from django_tables2 import Column, SingleTableMixin, TemplateColumn

from core.bulk import NOT_FILTERS, BulkActions, CountChanged, bulk_check, bulk_run, outcome_counts
from core.choices import Capability
from core.exceptions import DomainError, DomainErrors
from core.roles import user_can

T = TypeVar("T")
M = TypeVar("M", bound=Model)


class CapabilityMixin:
    """Refuse (403) a request whose user's role lacks ``capability``; safe methods need VIEW."""

    capability: str = Capability.VIEW

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        needed = Capability.VIEW if request.method in ("GET", "HEAD") else self.capability
        if not user_can(request.user, needed):
            raise PermissionDenied("Your role does not allow this.")
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


def require(request: HttpRequest, capability: str) -> None:
    if not user_can(request.user, capability):
        raise PermissionDenied("Your role does not allow this.")


def partial_request(request: HttpRequest) -> bool:
    """True when the request wants a page's live part only (a poll, a filter change), not the
    page: an HTMX request that is neither boosted nor a history restore (htmx 2 sends the restore
    of a page missing from its cache as an HTMX request, and it must get the whole page back)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


class BoundedPaginator(Paginator):
    """Tables take ``?per_page=`` from the URL; keep it within 1..MAX_PER_PAGE, since a value
    below 1 makes Django's Paginator raise EmptyPage even for page 1 (a 500)."""

    MAX_PER_PAGE = 500

    def __init__(self, object_list: Any, per_page: int | str, *args: Any, **kwargs: Any) -> None:
        super().__init__(
            object_list, min(max(int(per_page), 1), self.MAX_PER_PAGE), *args, **kwargs
        )


class BulkSelectColumn(Column):
    """The tick box of a row for the list's bulk actions; the header's box ticks the page.
    The boxes belong to the action bar's form (``form=``), which sits outside the table, since
    the table replaces itself when it polls (static/console/bulk.js keeps what is ticked)."""

    def __init__(self) -> None:
        super().__init__(
            empty_values=(),
            orderable=False,
            verbose_name=mark_safe(
                '<input type="checkbox" class="form-check-input aq-bulk-all" '
                'aria-label="Select all on this page">'
            ),
        )

    def render(self, record: Any) -> str:  # type: ignore[override]
        return format_html(
            '<input type="checkbox" class="form-check-input aq-bulk-pk" name="ids" value="{}" '
            'form="bulk-form" aria-label="Select {}">',
            record.pk,
            record,
        )


@dataclass(frozen=True)
class RowAction:
    """One button of a table row, on the URL ``url_name`` takes with the row's pk: a POST acts
    at once; ``post=False`` is a link to a page that asks first (core.generic.confirm_page)."""

    url_name: str
    label: str
    capability: str = Capability.CONFIGURE
    post: bool = True


class ActionsColumn(TemplateColumn):
    """The buttons of a table's rows; each shows only to a role that may use it (its view checks
    again)."""

    template_name = "core/_row_actions.html"

    def __init__(self, *actions: RowAction) -> None:
        super().__init__(orderable=False, verbose_name="")
        self.actions = actions

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        user = getattr(getattr(kwargs["table"], "request", None), "user", None)
        ctx["row_actions"] = [a for a in self.actions if user_can(user, a.capability)]
        return ctx


class ObjectListView(CapabilityMixin, SingleTableMixin, FilterView):
    """A paged, sortable, filterable table; HTMX requests get just the table fragment."""

    template_name = "core/object_list.html"
    # What a partial request (see partial_request) gets: the table, which polls itself with the
    # page's own URL and filters when ``poll_seconds`` is set.
    partial_template = "core/_table.html"
    poll_seconds: int | None = None
    # The table's element id, for a page's script or a test that looks for it.
    table_id: str | None = None
    paginate_by = 25
    paginator_class = BoundedPaginator
    title = ""
    add_url_name: str | None = None
    # More configure buttons beside Add: (URL name, label).
    extra_add: tuple[tuple[str, str], ...] = ()
    selector: Callable[[], Any] | None = None
    # The list's bulk actions: a tick box per row and an action bar for a role that may use one.
    bulk: BulkActions | None = None

    def bulk_allowed(self) -> dict[str, Any]:
        return self.bulk.allowed(self.request.user) if self.bulk is not None else {}

    def get_table_kwargs(self) -> dict[str, Any]:
        kwargs = super().get_table_kwargs()
        if self.bulk_allowed():
            kwargs.update(
                extra_columns=[("select", BulkSelectColumn())], sequence=("select", "...")
            )
        return kwargs

    def get_queryset(self):  # type: ignore[no-untyped-def]
        assert self.selector is not None
        return type(self).selector()  # type: ignore[misc]

    def get_template_names(self) -> list[str]:
        if partial_request(self.request):
            return [self.partial_template]
        return [self.template_name]

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        ctx.update(
            title=self.title,
            add_url_name=self.add_url_name,
            extra_add=self.extra_add,
            poll_seconds=self.poll_seconds,
            table_id=self.table_id,
        )
        if allowed := self.bulk_allowed():
            assert self.bulk is not None
            # The table carries its filter and its number of matches, which "select all
            # matching this filter" sends (static/console/bulk.js); the table's own poll keeps
            # both current.
            query = self.request.GET.copy()
            for key in NOT_FILTERS:
                query.pop(key, None)
            ctx.update(
                bulk=self.bulk, bulk_actions=list(allowed.items()), bulk_filter=query.urlencode()
            )
        return ctx


def run_service(request: HttpRequest, form: forms.Form, call: Callable[[], T]) -> T | None:
    """Call a service; put its domain errors on the form (by field when it names one that the
    form has) instead of letting them become a 500. Returns None when it failed."""
    try:
        return call()
    except DomainErrors as exc:
        for each in exc.errors:
            _add_domain_error(form, each)
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from exc
        _add_domain_error(form, exc)
    except DjangoValidationError as exc:
        if hasattr(exc, "error_dict"):
            for field, errs in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errs)
        else:
            form.add_error(None, exc.messages)
    return None


def _add_domain_error(form: forms.Form, exc: DomainError) -> None:
    field = exc.field if exc.field in form.fields else None
    message = exc.message
    if field is None and exc.field:
        # A path inside a field (``payload.amount`` from a JSON Schema check): put the error
        # on that field and name the path in it.
        root = re.split(r"[.\[]", exc.field, maxsplit=1)[0]
        if root in form.fields:
            field, message = root, f"{exc.field}: {exc.message}"
    form.add_error(field, message)


def run_action(request: HttpRequest, call: Callable[[], T], success: str) -> T | None:
    """Call a service for a button (no form): success or the error goes to the message bar."""
    try:
        result = call()
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from exc
        messages.error(request, exc.message)
        return None
    except DjangoValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return None
    messages.success(request, success.format(result=result))
    return result


def form_page(
    request: HttpRequest,
    form: forms.Form,
    call: Callable[[], T],
    *,
    title: str,
    success: Callable[[T], HttpResponse] | None = None,
    template: str = "core/form.html",
    context: dict[str, Any] | None = None,
) -> HttpResponse:
    """The one shape of every form page: on a valid POST call the service (``call`` reads
    ``form.cleaned_data``) and redirect to its result; otherwise render the form, with status 400
    when it carries errors."""
    if request.method == "POST" and form.is_valid():
        result = run_service(request, form, call)
        if result is not None:
            return success(result) if success is not None else redirect(result)
    return render(
        request,
        template,
        {"form": form, "title": title, **(context or {})},
        status=400 if form.errors else 200,
    )


@dataclass(frozen=True)
class Action:
    """One button of an object's page, one line in its app's table of them: the service it
    calls (with ``user=``, the object and ``params``), the capability it needs, and the message
    on success (``{obj}`` is the object; ``{{result}}`` the service's answer)."""

    service: Callable[..., object]
    success: str
    capability: str = Capability.OPERATE
    params: Mapping[str, object] = field(default_factory=dict)


def action_page(
    request: HttpRequest,
    actions: Mapping[str, Action],
    verb: str,
    *,
    get: Callable[[], M],
    arg: str,
    back: Callable[[M], HttpResponse] = redirect,
) -> HttpResponse:
    """A button (``verb``) on an object's page: POST calls its service with the object (``get``)
    as the keyword ``arg``; a verb the state does not allow comes back as the service's message
    and changes nothing. Either way back to the object's page."""
    action = actions[verb]
    require(request, action.capability)
    obj = get()
    if request.method == "POST":
        run_action(
            request,
            lambda: action.service(user=request.user, **{arg: obj}, **action.params),
            action.success.format(obj=obj),
        )
    return back(obj)


# Objects a bulk confirmation page names one by one; past these it gives their number.
BULK_CONFIRM_SHOWN = 100

DROP_TEXT = "This cannot be undone. It is refused while messages or other objects still use it."


def confirm_page(
    request: HttpRequest,
    obj: Model,
    call: Callable[[], object],
    *,
    kind: str,
    done: str,
    gone_url: str,
    title: str | None = None,
    text: str = DROP_TEXT,
    submit: str | None = None,
    cancel_url: str | None = None,
    nav: str | None = None,
) -> HttpResponse:
    """The one shape of every "are you sure?" page (drop, remove, unregister): GET asks, POST
    calls the service (``done`` or its error goes to the message bar) and goes to ``gone_url``
    (a URL name) once the object is gone, or back to the object (``cancel_url``) when it was
    refused. ``title`` and ``submit`` default to "Drop <kind> <obj>?" and "Drop <kind>"; ``nav``
    is a template of the app's tabs to show above."""
    cancel = cancel_url or obj.get_absolute_url()  # type: ignore[attr-defined]
    if request.method == "POST":
        run_action(request, call, done)
        # The service's answer is not enough: it may return None on success. The row is.
        if not type(obj)._default_manager.filter(pk=obj.pk).exists():
            return redirect(gone_url)
        return redirect(cancel)
    return render(
        request,
        "core/confirm.html",
        {
            "object": obj,
            "title": title or f"Drop {kind} {obj}?",
            "text": text,
            "submit_label": submit or f"Drop {kind}",
            "cancel_url": cancel,
            "nav": nav,
        },
    )


def bulk_page(request: HttpRequest, *, registry: BulkActions) -> HttpResponse:
    """A list's bulk action: GET (from the list's action bar) shows what will be done to which
    objects; POST (from that page) does it, object by object, through core.bulk (the code the
    API calls), and shows each object's outcome. HTMX swaps the outcome into the page. The
    objects are the ticked ``ids``, or every one the list's ``filter`` (its query string)
    matches when the action runs; the confirmation carries the count it showed
    (``expected_count``), so a filter that matches another number by then does nothing."""
    data = request.POST if request.method == "POST" else request.GET
    action, ids = data.get("action"), data.getlist("ids")
    # Present (even empty: no filter, every object) means "all matching the filter".
    filter_query = data.get("filter") if "filter" in data else None
    where = {
        "ids": ids,
        "filter": None if filter_query is None else QueryDict(filter_query),
        "expected_count": data.get("expected_count"),
    }
    ctx: dict[str, Any] = {"bulk": registry, "key": action, "list_url": reverse(registry.list_url)}
    try:
        if request.method == "POST":
            outcomes = bulk_run(registry, user=request.user, action=action, **where)
        else:
            chosen, targets = bulk_check(registry, user=request.user, action=action, **where)
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from exc
        ctx.update(title=f"Bulk action on {registry.plural}", error=exc)
        if isinstance(exc, CountChanged):
            # Back to the confirmation, which counts again.
            ctx["review_url"] = f"{request.path}?" + urlencode(
                {"action": action, "filter": filter_query or ""}
            )
        # An HTMX confirm (the objects changed meanwhile) swaps the error into the page.
        template = (
            "core/_bulk_confirm.html" if partial_request(request) else "core/bulk_confirm.html"
        )
        return render(request, template, ctx, status=exc.status_code)
    if request.method == "POST":
        ctx.update(
            action=registry.actions[str(action)],
            outcomes=outcomes,
            counts=outcome_counts(outcomes),
            title=f"{registry.actions[str(action)].label}: outcome",
        )
        template = "core/_bulk_result.html" if partial_request(request) else "core/bulk_result.html"
        return render(request, template, ctx)
    objects = targets.objects
    n = len(objects)
    what = f"{n:,} {registry.noun if n == 1 else registry.plural}"
    ctx.update(
        action=chosen,
        targets=targets,
        # A filter may match thousands: the page names the first ones, the count says the rest.
        objects=objects[:BULK_CONFIRM_SHOWN],
        more=max(0, n - BULK_CONFIRM_SHOWN),
        count=n,
        what=what,
        title=f"{chosen.label} {what}?",
    )
    return render(request, "core/bulk_confirm.html", ctx)
