import json
from typing import Any

from django import forms
from django.forms.fields import InvalidJSONInput

from core.validators import (
    MAX_JSON_DEPTH,
    depth_message,
    json_problems,
    json_text_depth,
    validate_storable,
)


class JSONTextField(forms.JSONField):
    """A JSON field whose empty value shows as an empty box rather than ``null``, and whose value
    comes back indented (a re-shown form must not squash a pasted document onto one line).

    It takes what the API's parser takes: JSON nested at most ``MAX_JSON_DEPTH`` levels (checked
    before parsing, which recurses), holding only text and numbers PostgreSQL can store."""

    def _too_deep(self, value: Any) -> bool:
        return isinstance(value, str) and json_text_depth(value) > MAX_JSON_DEPTH

    def to_python(self, value: Any) -> Any:
        if self._too_deep(value):
            raise forms.ValidationError(depth_message(), code="too_deep")
        converted = super().to_python(value)
        validate_storable(converted)
        return converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        # A refused value is shown back as it was typed: re-encoding it could fail or mislead.
        if self._too_deep(data):
            return InvalidJSONInput(data)
        value = super().bound_data(data, initial)
        if not isinstance(value, InvalidJSONInput) and json_problems(value, limit=1):
            return InvalidJSONInput(data)
        return value

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return super().has_changed(initial, data)
        except forms.ValidationError:
            return True

    def prepare_value(self, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)
        return super().prepare_value(value)


class JSONPayloadField(JSONTextField):
    """A message payload: any JSON value but null. ``{}`` and ``[]`` are payloads like any other
    (Django's JSONField counts them as empty and answered "This field is required")."""

    empty_values = [None, ""]
