from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import DomainError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler plus the domain errors raised by services, so no service error becomes a 500."""
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=400)
    return drf_exception_handler(exc, context)
