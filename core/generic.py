"""View plumbing shared by every app's pages: capability checks, list pages, service forms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse
from django_filters.views import FilterView
from django_tables2 import SingleTableMixin

from core.choices import Capability
from core.exceptions import DomainError
from core.roles import user_can

T = TypeVar("T")


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


class ObjectListView(CapabilityMixin, SingleTableMixin, FilterView):
    """A paged, sortable, filterable table; HTMX requests get just the table fragment."""

    template_name = "core/object_list.html"
    paginate_by = 25
    title = ""
    add_url_name: str | None = None
    selector: Callable[[], Any] | None = None

    def get_queryset(self):  # type: ignore[no-untyped-def]
        assert self.selector is not None
        return type(self).selector()  # type: ignore[misc]

    def get_template_names(self) -> list[str]:
        if getattr(self.request, "htmx", False) and not self.request.htmx.boosted:
            return ["core/_table.html"]
        return [self.template_name]

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        ctx.update(title=self.title, add_url_name=self.add_url_name)
        return ctx


def run_service(request: HttpRequest, form: forms.Form, call: Callable[[], T]) -> T | None:
    """Call a service; put its domain errors on the form (by field when it names one that the
    form has) instead of letting them become a 500. Returns None when it failed."""
    try:
        return call()
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from exc
        field = exc.field if exc.field in form.fields else None
        form.add_error(field, exc.message)
    except DjangoValidationError as exc:
        if hasattr(exc, "error_dict"):
            for field, errs in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errs)
        else:
            form.add_error(None, exc.messages)
    return None


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
