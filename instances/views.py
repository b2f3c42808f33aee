"""Pages of the instances app: the instances list (the GV$INSTANCE analogue)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core.generic import ObjectListView
from instances import selectors
from instances.filtersets import InstanceFilterSet
from instances.tables import InstanceTable


class InstanceListView(ObjectListView):
    title = "Instances"
    template_name = "instances/instance_list.html"
    table_class = InstanceTable
    filterset_class = InstanceFilterSet
    selector = staticmethod(selectors.instance_list)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        ctx.update(
            this_instance=settings.AQ_INSTANCE_NAME,
            limit_s=settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S,
        )
        return ctx
