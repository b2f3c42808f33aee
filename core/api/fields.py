"""Serializer fields shared by the apps."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.validators import MAX_JSON_DEPTH, depth_message, json_problems, json_text_depth


class JSONField(serializers.JSONField):
    """DRF's JSONField, with the JSON parser's door checks (core.api.parsers) for JSON that
    arrives as text: a form or multipart body hands the field a string, which DRF parses itself,
    past the parser. Too deep is refused before parsing (which recurses); text PostgreSQL cannot
    store and non-finite numbers after, each named by its path (``action_context.a``)."""

    def to_internal_value(self, data: Any) -> Any:
        as_text = self.binary or getattr(data, "is_json_string", False)
        if not (as_text and isinstance(data, str | bytes)):
            return super().to_internal_value(data)
        text = data.decode(errors="replace") if isinstance(data, bytes) else data
        if json_text_depth(text) > MAX_JSON_DEPTH:
            raise serializers.ValidationError(depth_message(), code="too_deep")
        value = super().to_internal_value(data)
        if problems := json_problems(value):
            if list(problems) == ["detail"]:
                raise serializers.ValidationError(problems["detail"], code="unstorable")
            raise serializers.ValidationError(
                {path: [message] for path, message in problems.items()}, code="unstorable"
            )
        return value


_JSON_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(JSONField):
    """A JSON object, also from a form or multipart body, where DRF's DictField reads only
    ``name.key`` fields and silently drops ``name={...}`` given as text."""

    default_error_messages = {"not_an_object": "Must be a JSON object, not {kind}."}

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            self.fail("not_an_object", kind=_JSON_KINDS.get(type(value), type(value).__name__))
        return value
