from typing import Any

from django.conf import settings
from django.core.exceptions import (
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import DomainError
from core.validators import is_ascii_id


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer errors as one level keyed by path (``messages[1].priority``), the same
    spelling the engine uses for payload paths, so a client reads every error one way."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            index = isinstance(key, int) or (isinstance(key, str) and is_ascii_id(key))
            path = f"{prefix}[{key}]" if index else (f"{prefix}.{key}" if prefix else str(key))
            out.update(flatten_errors(value, path))
        return out
    if isinstance(detail, list) and any(isinstance(v, dict | list) for v in detail):
        out = {}
        for i, value in enumerate(detail):
            if value:
                out.update(flatten_errors(value, f"{prefix}[{i}]"))
        return out
    items = detail if isinstance(detail, list) else [detail]
    return {prefix or "detail": [str(v) for v in items]}


# Django's limits on a request body: what each refusal says, and the setting that sets it.
_REQUEST_LIMITS: dict[type[Exception], tuple[str, str]] = {
    RequestDataTooBig: ("DATA_UPLOAD_MAX_MEMORY_SIZE", "The request body is over {n} bytes"),
    TooManyFieldsSent: ("DATA_UPLOAD_MAX_NUMBER_FIELDS", "The request has more than {n} fields"),
    TooManyFilesSent: ("DATA_UPLOAD_MAX_NUMBER_FILES", "The request has more than {n} files"),
}


def request_limit_error(exc: Exception) -> dict[str, Any] | None:
    """The 413 body for a request over one of Django's size limits, naming the limit; None for
    any other exception. The API answers it as JSON, the pages show its ``detail``."""
    for kind, (setting, text) in _REQUEST_LIMITS.items():
        if isinstance(exc, kind):
            limit = getattr(settings, setting)
            # The Error component's shape (core/api/schema.py): the limit is named in detail.
            return {
                "detail": f"{text.format(n=limit)}: the limit is {setting} = {limit}.",
                "code": "request_too_large",
            }
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler plus the domain errors raised by services, so no service error becomes a 500."""
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=exc.status_code)
    if (too_large := request_limit_error(exc)) is not None:
        return Response(too_large, status=413)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=400)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.ValidationError):
        response.data = flatten_errors(response.data)
    elif response is not None and isinstance(response.data, dict) and "detail" in response.data:
        # Plain text and its code, as the Error component says: every renderer (the schema
        # view's YAML one too) shows the same two fields, not an ErrorDetail's inside.
        detail = response.data["detail"]
        response.data = {"detail": str(detail), "code": getattr(detail, "code", None) or "error"}
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: a URL under /api/ that no route matches (``/api/queues/1.5/`` where the id
    pattern takes no dot) answers in the API's error body, not Django's HTML page."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return page_not_found(request, exception)
