from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.templatetags.static import static

from core.choices import Capability
from core.generic import partial_request, require
from instances import selectors as instance_selectors
from queues import selectors as queue_selectors

DASHBOARD_FRAGMENTS = {
    "live": "console/_dashboard_live.html",
    "instances": "console/_dashboard_instances.html",
}


def dashboard(request: HttpRequest) -> HttpResponse:
    require(request, Capability.VIEW)
    from jobs import selectors as job_selectors

    # What needs an operator comes first on the page: failures, stuck runs, backlogs.
    attention = job_selectors.attention()
    template = "console/dashboard.html"
    # The live parts poll the dashboard's own URL for themselves alone.
    fragment = request.GET.get("fragment")
    if partial_request(request) and fragment in DASHBOARD_FRAGMENTS:
        template = DASHBOARD_FRAGMENTS[fragment]
    return render(
        request,
        template,
        {
            "counts": queue_selectors.overview(),
            "attention": attention,
            "maintenance": attention["maintenance"],
            "instances": list(instance_selectors.instance_list()[:20]),
            "owner_moves": list(queue_selectors.owner_move_list()[:5]),
        },
    )


def not_built(request: HttpRequest, *, area: str, issue: int) -> HttpResponse:
    require(request, Capability.VIEW)
    return render(request, "console/not_built.html", {"area": area, "issue": issue})


@login_not_required
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers and tools ask for /favicon.ico whatever the page says: send them to the icon."""
    return HttpResponsePermanentRedirect(static("console/favicon.svg"))
