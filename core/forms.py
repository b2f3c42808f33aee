from typing import Any

from django import forms


class JSONTextField(forms.JSONField):
    """A JSON field whose empty value shows as an empty box rather than ``null``."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)
