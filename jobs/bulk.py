"""The propagation list's bulk actions (page and ``POST /api/propagations/bulk/``): one line per
verb, each calling the single-object service the propagation's own page calls."""

from __future__ import annotations

from core.bulk import BulkAction, BulkActions
from core.choices import Capability
from jobs import selectors, services
from jobs.filtersets import PropagationFilterSet
from jobs.models import Propagation

PROPAGATION_BULK = BulkActions(
    noun="propagation",
    plural="propagations",
    objects=lambda: Propagation.objects.all(),
    actions={
        "enable": BulkAction(
            label="Enable",
            capability=Capability.OPERATE,
            run=lambda user, p: services.schedule_enable(user=user, propagation=p),
            describe="ENABLE_PROPAGATION_SCHEDULE: enable each propagation's schedule.",
            done="Schedule enabled.",
        ),
        "disable": BulkAction(
            label="Disable",
            capability=Capability.OPERATE,
            run=lambda user, p: services.schedule_disable(user=user, propagation=p),
            describe="DISABLE_PROPAGATION_SCHEDULE: a running window stops at its next heartbeat.",
            done="Schedule disabled.",
        ),
        "reset": BulkAction(
            label="Reset failures",
            capability=Capability.OPERATE,
            run=lambda user, p: services.schedule_reset(user=user, propagation=p),
            describe="Clear the failures of each schedule and enable it; the next window "
            "starts at once.",
            done="Failures cleared; the schedule is enabled and runs at once.",
        ),
        "delete": BulkAction(
            label="Delete",
            capability=Capability.CONFIGURE,
            run=lambda user, p: services.propagation_delete(user=user, propagation=p),
            describe="DROP_PROPAGATION: the schedule, the run history and the source's "
            "subscriber go with each propagation.",
            done="Dropped.",
            destructive=True,
        ),
    },
    list_url="jobs:propagation_list",
    detail_url="jobs:propagation",
    bulk_url="jobs:propagation_bulk",
    filterset=PropagationFilterSet,
    listing=selectors.propagation_list,
)
