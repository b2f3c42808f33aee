"""The OpenAPI schema documents the error answers every operation can give, in one place, with
the one body ``core.api.exceptions.exception_handler`` produces."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

# Two spellings come out of the exception handler: ``{"detail": "…", "code": "…"}`` for an error
# about the request as a whole (a 413 among them), and ``{"<field path>": ["…"]}`` for errors
# naming the input at fault (``messages[1].priority``); a Django ValidationError with
# no field gives ``detail`` a list.
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "An error. `detail` (with a `code`) describes a refusal of the whole request; otherwise "
        "each key names the input at fault (a field, or a path such as `messages[1].priority`) "
        "and holds its messages."
    ),
    "properties": {
        "detail": {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}},
            ]
        },
        "code": {"type": "string"},
        # A bulk action's 409 ``count_changed`` (core.bulk.CountChanged): what the filter
        # matches now and what the request expected.
        "count": {"type": "integer", "description": "count_changed: the objects matching now."},
        "expected_count": {
            "type": "integer",
            "description": "count_changed: the number the request expected.",
        },
    },
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}

_ERROR = ResolvedComponent(
    name="Error", type=ResolvedComponent.SCHEMA, object="Error", schema=ERROR_SCHEMA
)

_DESCRIPTIONS = {
    "400": "The input is invalid; the body names the field or position at fault.",
    "401": "No credentials, or credentials that are not valid.",
    "403": "The user's role does not allow this.",
    "404": "No such object (by id or name), or no such part of it.",
    "409": "The request conflicts with the current state (a duplicate name, an object in use, "
    "a state that does not allow the change).",
    "413": "The request is over one of the size limits (body bytes, form fields); the body "
    "names the setting.",
    "503": "The database is not answering (restarting?); the body says so. Retry-After says when "
    "to try again; a write may or may not have been applied.",
}

_PATH_PARAMETER = re.compile(r"{\w+}")


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema plus the error responses: 401 and 403 everywhere (every
    endpoint needs a login and a role), 400 and 413 wherever there is input to refuse or too much
    of it, 404 on the routes that address an object, 409 on every write, 503 everywhere (the
    database away: core.views.server_error). An operation's own
    ``responses`` win."""

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        self.registry.register_on_missing(_ERROR)
        responses = operation["responses"]
        for code in self._error_codes(operation):
            responses.setdefault(
                code,
                {
                    "description": _DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": _ERROR.ref}},
                },
            )
        return operation

    def _map_serializer_field(self, field: Any, direction: str, *args: Any, **kwargs: Any) -> Any:
        schema = super()._map_serializer_field(field, direction, *args, **kwargs)
        enum = schema.get("enum") if isinstance(schema, dict) else None
        if enum is not None and "" not in enum and _blank_model_choice(field):
            schema["enum"] = [*enum, ""]
        return schema

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and getattr(serializer, "schema_closed", False):
            schema["additionalProperties"] = False  # KnownFieldsOnly refuses any other key
        return schema

    def _error_codes(self, operation: dict[str, Any]) -> list[str]:
        writes = self.method not in ("GET", "HEAD", "OPTIONS")
        has_input = writes or bool(operation.get("parameters")) or "requestBody" in operation
        codes = ["401", "403", "503"]
        if has_input:
            codes += ["400", "413"]
        if _PATH_PARAMETER.search(self.path):
            codes.append("404")
        if writes:
            codes.append("409")
        return sorted(codes)


def _blank_model_choice(field: Any) -> bool:
    """A read-only ChoiceField that a ModelSerializer built from a ``blank=True`` model field:
    DRF drops ``allow_blank`` from read-only fields, yet the stored value may well be ""."""
    if not isinstance(field, serializers.ChoiceField) or not field.read_only or field.allow_blank:
        return False
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    if model is None or not field.source or "." in field.source:
        return False
    try:
        return bool(model._meta.get_field(field.source).blank)
    except FieldDoesNotExist:
        return False
