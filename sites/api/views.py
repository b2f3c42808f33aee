"""API views of the sites app: the same selectors, FilterSet and services as the pages; every
verb is one service call, and DomainErrors become 400/403/404/409 in core.api.exceptions."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.mixins import NameOrIdLookupMixin
from core.choices import Capability
from sites import selectors, services
from sites.api import serializers as s
from sites.filtersets import DatabaseLinkFilterSet
from sites.models import DatabaseLink


class DatabaseLinkViewSet(NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Database links to other sites (CREATE / ALTER / DROP DATABASE LINK) and Test connection,
    addressed by id or name. The password is write-only and shows as <<ENCRYPTED>>."""

    serializer_class = s.DatabaseLinkSerializer
    filterset_class = DatabaseLinkFilterSet
    ordering_fields = ["name", "created"]
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]
    action_capabilities = {"test_connection": Capability.OPERATE}

    def get_queryset(self) -> QuerySet[DatabaseLink]:
        return selectors.database_link_list()

    def _shown(self, link: DatabaseLink) -> dict[str, Any]:
        return s.DatabaseLinkSerializer(selectors.database_link_list().get(pk=link.pk)).data

    @extend_schema(
        request=s.DatabaseLinkCreateSerializer, responses={201: s.DatabaseLinkSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """CREATE DATABASE LINK: the remote must answer as a site; its global name is kept."""
        ser = s.DatabaseLinkCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        link = services.database_link_create(user=request.user, **ser.validated_data)
        return Response(self._shown(link), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.DatabaseLinkAlterSerializer, responses=s.DatabaseLinkSerializer)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """ALTER DATABASE LINK: only the fields given change (PUT and PATCH alike)."""
        link = self.get_object()
        ser = s.DatabaseLinkAlterSerializer(data=request.data, link=link)
        ser.is_valid(raise_exception=True)
        link = services.database_link_alter(user=request.user, link=link, **ser.changes())
        return Response(self._shown(link))

    @extend_schema(request=s.DatabaseLinkAlterSerializer, responses=s.DatabaseLinkSerializer)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, **kwargs)

    def perform_destroy(self, instance: DatabaseLink) -> None:
        """DROP DATABASE LINK (409 while a propagation uses it)."""
        services.database_link_drop(user=self.request.user, link=instance)

    @extend_schema(request=None, responses=s.DatabaseLinkTestSerializer)
    @action(detail=True, methods=["post"], url_path="test-connection", url_name="test-connection")
    def test_connection(self, request: Request, pk: str | None = None) -> Response:
        """Connect, check the site, read its global name: ``ok`` and what it said or why not."""
        ok, text = services.database_link_test(user=request.user, link=self.get_object())
        return Response({"ok": ok, "detail": text})
