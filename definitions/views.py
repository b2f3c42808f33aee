"""The definitions page: export (download) and import (upload, review the changes, confirm).
Thin over definitions.selectors and definitions.services, as the API is."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.choices import Capability
from core.exceptions import DomainError
from core.generic import require
from definitions.api.views import secrets_mode
from definitions.forms import ImportForm
from definitions.selectors import definitions_export
from definitions.services import definitions_import


def export(request: HttpRequest) -> HttpResponse:
    """The document as a download (``?secrets=omit`` leaves the secrets out)."""
    require(request, Capability.CONFIGURE)
    try:
        mode = secrets_mode(request.GET.get("secrets", ""))
    except DomainError as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain")
    doc = definitions_export(secrets=mode)
    response = HttpResponse(json.dumps(doc, indent=2) + "\n", content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="definitions.json"'
    return response


def page(request: HttpRequest) -> HttpResponse:
    """Step one (``preview``): a dry run shows what the file would change. Step two
    (``apply``): the same document, sent back from the page, is imported."""
    require(request, Capability.CONFIGURE)
    form = ImportForm(request.POST or None, request.FILES or None)
    context: dict[str, object] = {"title": "Definitions", "form": form}
    if request.method == "POST" and form.is_valid():
        apply = request.POST.get("step") == "apply"
        try:
            plan = definitions_import(
                user=request.user,
                document=form.cleaned_data["parsed"],
                prune=form.cleaned_data["prune"],
                dry_run=not apply,
            )
        except DomainError as exc:
            context["error"] = exc
        else:
            context["plan"] = plan
            context["document"] = form.cleaned_data["document"]
            if apply:
                summary = plan.as_dict()["summary"]
                messages.success(
                    request,
                    "Imported: " + ", ".join(f"{n} {a}" for a, n in summary.items()) + ".",
                )
    return render(request, "definitions/page.html", context)
