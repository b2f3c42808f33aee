"""Forms of the parallel pages: shape only; the services check the rest."""

from __future__ import annotations

from django import forms

from queues.choices import SortOrder


class LogicalQueueCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Partitions are <name>_P1 … <name>_PN.")
    partitions = forms.IntegerField(
        required=False,
        help_text="Default: 3 times the instances (the white paper's 3N).",
    )
    instances = forms.CharField(
        required=False,
        help_text="Instance names, comma-separated, in ring order (default: every known "
        "instance). A name no worker has reported is registered DOWN, with a warning.",
    )
    sort_order = forms.ChoiceField(choices=SortOrder.choices, initial=SortOrder.ENQ_TIME)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    purpose = forms.CharField(required=False, max_length=200, help_text="Of every partition.")

    def clean_instances(self) -> list[str] | None:
        raw = self.cleaned_data.get("instances") or ""
        names = [n.strip() for n in raw.split(",") if n.strip()]
        return names or None


class PurposeForm(forms.Form):
    purpose = forms.CharField(required=False, max_length=200)


class RebuildForm(forms.Form):
    instances = forms.CharField(
        required=False,
        help_text="Comma-separated, in ring order (default: the instances up now).",
    )

    def clean_instances(self) -> list[str] | None:
        raw = self.cleaned_data.get("instances") or ""
        names = [n.strip() for n in raw.split(",") if n.strip()]
        return names or None
