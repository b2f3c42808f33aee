from django.db.models import QuerySet
from rest_framework import viewsets

from core import selectors
from core.api.serializers import ChangeLogEntrySerializer
from core.filtersets import ChangeLogFilterSet


class ChangeLogViewSet(viewsets.ReadOnlyModelViewSet):
    """Every topology change and operator action, newest first."""

    serializer_class = ChangeLogEntrySerializer
    filterset_class = ChangeLogFilterSet
    ordering_fields = ["time"]

    def get_queryset(self) -> QuerySet:
        return selectors.change_log_list()
