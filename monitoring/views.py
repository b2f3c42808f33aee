from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from monitoring.access import Refused, metrics_access_check
from monitoring.metrics import ConsoleCollector


def _registry() -> CollectorRegistry:
    # A registry of our own: the client's default one carries this process's own metrics
    # (CPU, GC), which say nothing about the console and differ per web process.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConsoleCollector())
    return registry


@login_not_required  # Prometheus has no session: the access check below decides.
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's text format; a token, a session or an allowed address (monitoring.access)."""
    try:
        metrics_access_check(request)
    except Refused as refused:
        response = JsonResponse({"detail": refused.detail}, status=refused.status)
        if refused.status == 401:
            response["WWW-Authenticate"] = 'Token realm="metrics"'
        return response
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
