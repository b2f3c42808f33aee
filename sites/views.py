"""Pages of the sites app under /sites/: thin views over sites.services (writes) and
sites.selectors (reads). Validate the form, call one service, render."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.choices import Capability
from core.generic import ObjectListView, confirm_page, form_page, partial_request, require
from sites import selectors, services
from sites.filtersets import DatabaseLinkFilterSet
from sites.forms import DatabaseLinkForm
from sites.models import DatabaseLink
from sites.tables import DatabaseLinkTable


class DatabaseLinkListView(ObjectListView):
    title = "Database links"
    table_class = DatabaseLinkTable
    filterset_class = DatabaseLinkFilterSet
    selector = staticmethod(selectors.database_link_list)
    add_url_name = "sites:link_add"


def link_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    link = get_object_or_404(selectors.database_link_list(), pk=pk)
    return render(
        request, "sites/link_detail.html", {"object": link, "title": f"Database link {link}"}
    )


def link_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = DatabaseLinkForm(request.POST if request.method == "POST" else None)
    return form_page(
        request,
        form,
        lambda: services.database_link_create(user=request.user, **form.service_kwargs()),
        title="New database link",
        context={"submit_label": "Create"},
    )


def link_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    link = get_object_or_404(DatabaseLink, pk=pk)
    form = DatabaseLinkForm(request.POST if request.method == "POST" else None, link=link)
    return form_page(
        request,
        form,
        lambda: services.database_link_alter(user=request.user, link=link, **form.service_kwargs()),
        title=f"Alter database link {link.name}",
    )


def link_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    link = get_object_or_404(DatabaseLink, pk=pk)
    return confirm_page(
        request,
        link,
        lambda: services.database_link_drop(user=request.user, link=link),
        kind="database link",
        done=f"Database link {link.name} dropped.",
        gone_url="sites:link_list",
    )


def link_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Test connection: HTMX gets the result box, a plain POST a message on the link page."""
    require(request, Capability.OPERATE)
    link = get_object_or_404(DatabaseLink, pk=pk)
    if request.method != "POST":
        return redirect(link)
    ok, text = services.database_link_test(user=request.user, link=link)
    if partial_request(request):
        return render(request, "sites/_link_test.html", {"ok": ok, "text": text})
    (messages.success if ok else messages.error)(
        request, f"Connection {'OK' if ok else 'failed'}: {text}"
    )
    return redirect(link)
