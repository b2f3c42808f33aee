"""API of the instances app: read-only, over the same selector and FilterSet as the page."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import viewsets

from core.api.mixins import NameOrIdLookupMixin
from instances import selectors
from instances.api.serializers import InstanceSerializer
from instances.filtersets import InstanceFilterSet
from instances.models import Instance


class InstanceViewSet(NameOrIdLookupMixin, viewsets.ReadOnlyModelViewSet):
    """Instances (GV$INSTANCE): nodes running Celery workers under one AQ_INSTANCE_NAME, UP while
    one of their workers beat within AQ_INSTANCE_HEARTBEAT_LIMIT_S. Addressed by INST_ID or name."""

    serializer_class = InstanceSerializer
    filterset_class = InstanceFilterSet
    ordering_fields = ["inst_id", "name", "last_heartbeat"]

    def get_queryset(self) -> QuerySet[Instance]:
        return selectors.instance_list()
