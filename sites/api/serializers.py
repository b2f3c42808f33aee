"""API shapes of the sites app: one output serializer per object, input serializers named after
the service verbs; their field names are the services' error fields."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core import crypto
from sites.choices import SslMode
from sites.models import DatabaseLink
from sites.services import NO_CHANGE


class DatabaseLinkSerializer(serializers.ModelSerializer):
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    password = serializers.SerializerMethodField(
        help_text=f"{crypto.MASK} when one is stored, empty when none; never the password."
    )

    same_site_links = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        default=list,
        help_text="Other links here that reach the same site (the same global name): allowed, "
        "as Oracle allows several links to one database; a propagation may not go from one "
        "source to one queue there through two of them.",
    )

    connect = serializers.CharField(
        read_only=True,
        default="",
        help_text="The connect text DBA_DB_LINKS.HOST shows: host:port/database, or "
        "localhost:port/database (socket /dir) for a Unix socket directory (``host`` as stored).",
    )

    class Meta:
        model = DatabaseLink
        fields = [
            "id",
            "name",
            "owner",
            "host",
            "connect",
            "port",
            "database",
            "username",
            "password",
            "sslmode",
            "sslrootcert",
            "remote_global_name",
            "same_site_links",
            "comment",
            "created",
            "updated",
        ]
        read_only_fields = fields

    def get_password(self, obj: DatabaseLink) -> str:
        return crypto.MASK if obj.password_encrypted else ""


class DatabaseLinkCreateSerializer(serializers.Serializer):
    """CREATE DATABASE LINK: the remote is asked before anything is written."""

    name = serializers.CharField(max_length=128)
    host = serializers.CharField(max_length=255)
    port = serializers.IntegerField(min_value=1, max_value=65535, default=5432)
    database = serializers.CharField(max_length=63)
    username = serializers.CharField(max_length=63, help_text="The role at the remote site.")
    password = serializers.CharField(
        max_length=1024,
        required=False,
        allow_blank=True,
        write_only=True,
        default="",
        trim_whitespace=False,
        style={"input_type": "password"},
    )
    sslmode = serializers.ChoiceField(choices=SslMode.choices, default=SslMode.PREFER)
    sslrootcert = serializers.CharField(
        max_length=1024, required=False, allow_blank=True, default=""
    )
    comment = serializers.CharField(max_length=4000, required=False, allow_blank=True, default="")


class DatabaseLinkAlterSerializer(serializers.Serializer):
    """ALTER DATABASE LINK: absent fields stay; a connection change asks the remote again. The
    name is fixed (a different one is a 400 naming it)."""

    host = serializers.CharField(max_length=255, required=False)
    port = serializers.IntegerField(min_value=1, max_value=65535, required=False)
    database = serializers.CharField(max_length=63, required=False)
    username = serializers.CharField(max_length=63, required=False)
    password = serializers.CharField(
        max_length=1024,
        required=False,
        allow_blank=True,
        write_only=True,
        trim_whitespace=False,
        style={"input_type": "password"},
    )
    sslmode = serializers.ChoiceField(choices=SslMode.choices, required=False)
    sslrootcert = serializers.CharField(max_length=1024, required=False, allow_blank=True)
    comment = serializers.CharField(max_length=4000, required=False, allow_blank=True)

    def __init__(self, *args: Any, link: DatabaseLink | None = None, **kwargs: Any) -> None:
        self.link = link  # None only when the schema generator builds one
        super().__init__(*args, **kwargs)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = self.initial_data
        renamed = (
            self.link is not None
            and isinstance(given, dict)
            and "name" in given
            and str(given["name"]).strip().upper() != self.link.name
        )
        if renamed:
            raise serializers.ValidationError(
                {"name": [f"A database link's name is fixed ({self.link.name})."]}  # type: ignore[union-attr]
            )
        return attrs

    def changes(self) -> dict[str, Any]:
        return {name: self.validated_data.get(name, NO_CHANGE) for name in self.fields}


class DatabaseLinkTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    detail = serializers.CharField(help_text="The site's global name and version, or why not.")
