"""Shape of the page's import: a file upload (first step) or the reviewed document (second)."""

from __future__ import annotations

import json
from typing import Any

from django import forms


class ImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="A definitions document (JSON).")
    document = forms.CharField(required=False, widget=forms.HiddenInput)
    prune = forms.BooleanField(
        required=False,
        label="Delete what the document does not define (prune)",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload, text = data.get("file"), data.get("document")
        if upload is None and not text:
            raise forms.ValidationError("Choose a definitions file.")
        try:
            raw = upload.read().decode("utf-8") if upload is not None else text
            data["parsed"] = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.add_error("file", f"Not a JSON document: {exc}")
        else:
            data["document"] = raw
        return data
