from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.choices import Capability
from core.generic import require
from queues import selectors as queue_selectors


def dashboard(request: HttpRequest) -> HttpResponse:
    require(request, Capability.VIEW)
    from jobs import selectors as job_selectors

    # What needs an operator comes first on the page: failures, stuck runs, backlogs.
    attention = job_selectors.attention()
    return render(
        request,
        "console/dashboard.html",
        {
            "counts": queue_selectors.overview(),
            "attention": attention,
            "maintenance": attention["maintenance"],
        },
    )


def not_built(request: HttpRequest, *, area: str, issue: int) -> HttpResponse:
    require(request, Capability.VIEW)
    return render(request, "console/not_built.html", {"area": area, "issue": issue})
