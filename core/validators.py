"""Input rules shared by the API's serializers and parsers, the page forms and the services."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

from core.storable import (  # noqa: F401  (the rules' one import place for apps)
    MAX_JSON_DEPTH,
    MAX_SECONDS,
    PG_INT_MAX,
    depth_message,
    is_ascii_id,
    json_problems,
    json_text_depth,
    seconds_problem,
    text_problem,
)

# Oracle identifiers: a letter, then letters, digits, _ $ #; 128 characters at most.
name_validator = RegexValidator(
    r"^[A-Za-z][A-Za-z0-9_$#]{0,127}$",
    "Use a letter followed by letters, digits, _, $ or # (at most 128 characters).",
)

# A payload (object) type name: an identifier, optionally after its schema (``HR.ORDER_T``).
TYPE_NAME_RE = r"^[A-Za-z][A-Za-z0-9_$#]{0,127}(\.[A-Za-z][A-Za-z0-9_$#]{0,127})?$"
TYPE_NAME_HELP = (
    "ANY, or a type name: a letter followed by letters, digits, _, $ or #, optionally after a "
    "schema name and a dot (HR.ORDER_T)."
)


def validate_storable(value: Any) -> None:
    """A Django validator (forms, serializers, models): ``value`` can be stored as it is."""
    problems = json_problems(value)
    if problems:
        path, message = next(iter(problems.items()))
        if path != "detail":
            message = f"At {path}: {message}"
        raise ValidationError(message, code="unstorable")


def validate_seconds(value: float | None) -> None:
    """A Django validator for durations in seconds: finite, at most :data:`MAX_SECONDS`."""
    if message := seconds_problem(value):
        raise ValidationError(message, code="max_value")
