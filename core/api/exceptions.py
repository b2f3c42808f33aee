from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import DomainError


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer errors as one level keyed by path (``messages[1].priority``), the same
    spelling the engine uses for payload paths, so a client reads every error one way."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            index = isinstance(key, int) or (isinstance(key, str) and key.isdigit())
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


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler plus the domain errors raised by services, so no service error becomes a 500."""
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=400)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.ValidationError):
        response.data = flatten_errors(response.data)
    return response
