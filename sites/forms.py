"""Forms of the sites pages: they check the shape of page input and hand it to one service as
keyword arguments; the service asks the remote and names the field at fault. Field names are
the services' error fields, so a DomainError lands next to its input."""

from __future__ import annotations

from typing import Any

from django import forms

from sites.choices import SslMode
from sites.models import DatabaseLink
from sites.services import NO_CHANGE


class DatabaseLinkForm(forms.Form):
    """CREATE DATABASE LINK (no ``link``) or ALTER DATABASE LINK (``link``: the name is fixed and
    a blank password keeps the stored one)."""

    name = forms.CharField(max_length=128, help_text="Fixed once the link exists.")
    host = forms.CharField(max_length=255)
    port = forms.IntegerField(min_value=1, max_value=65535, initial=5432)
    database = forms.CharField(max_length=63)
    username = forms.CharField(max_length=63, help_text="The role at the remote site.")
    password = forms.CharField(
        required=False,
        max_length=1024,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted, never shown.",
    )
    sslmode = forms.ChoiceField(choices=SslMode.choices, initial=SslMode.PREFER, label="TLS mode")
    sslrootcert = forms.CharField(
        required=False,
        max_length=1024,
        label="Root certificate",
        help_text="Path of the root certificate file on this machine (verify-ca, verify-full).",
    )
    comment = forms.CharField(
        required=False, max_length=4000, widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(self, *args: Any, link: DatabaseLink | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.link = link
        if link is not None:
            del self.fields["name"]
            for name in ("host", "port", "database", "username", "sslmode", "sslrootcert"):
                self.fields[name].initial = getattr(link, name)
            self.fields["comment"].initial = link.comment
            self.fields["password"].help_text += " Leave blank to keep the stored one."

    def service_kwargs(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        if self.link is None:
            return data
        # An alter passes only what changed; a blank password keeps the stored one.
        out = {k: v for k, v in data.items() if v != getattr(self.link, k, NO_CHANGE)}
        if not data.get("password"):
            out.pop("password", None)
        return out
