import json
from typing import Any

from django import forms


class JSONTextField(forms.JSONField):
    """A JSON field whose empty value shows as an empty box rather than ``null``, and whose value
    comes back indented (a re-shown form must not squash a pasted document onto one line)."""

    def prepare_value(self, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)
        return super().prepare_value(value)
