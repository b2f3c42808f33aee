"""The gateway job list's bulk actions (page and ``POST /api/gateway/jobs/bulk/``): one line per
verb, each calling the single-object service the job's own page calls."""

from __future__ import annotations

from core.bulk import BulkAction, BulkActions
from core.choices import Capability
from gateway import selectors, services
from gateway.filtersets import JobFilterSet
from gateway.models import Job

JOB_BULK = BulkActions(
    noun="job",
    plural="gateway jobs",
    objects=lambda: Job.objects.select_related("link"),
    actions={
        "enable": BulkAction(
            label="Enable",
            capability=Capability.OPERATE,
            run=lambda user, j: services.job_enable(user=user, job=j),
            describe="ENABLE_JOB.",
            done="Enabled.",
        ),
        "disable": BulkAction(
            label="Disable",
            capability=Capability.OPERATE,
            run=lambda user, j: services.job_disable(user=user, job=j),
            describe="DISABLE_JOB: propagation stops; the sources keep their messages.",
            done="Disabled; its source keeps the messages.",
        ),
        "reset": BulkAction(
            label="Reset",
            capability=Capability.OPERATE,
            run=lambda user, j: services.job_reset(user=user, job=j),
            describe="RESET_JOB: READY, failures 0, retried at once.",
            done="Reset: READY, failures 0, retried at once.",
        ),
        "delete": BulkAction(
            label="Delete",
            capability=Capability.CONFIGURE,
            # REMOVE_JOB without force, as DELETE on the API: the agent cleans the foreign side.
            run=lambda user, j: services.job_remove(user=user, job=j),
            describe="REMOVE_JOB: each job goes DELETE_PENDING; its agent removes it after "
            "cleaning the foreign side.",
            done="DELETE_PENDING: its agent removes it after cleaning the foreign side.",
            destructive=True,
        ),
    },
    list_url="gateway:job_list",
    detail_url="gateway:job",
    bulk_url="gateway:job_bulk",
    filterset=JobFilterSet,
    listing=selectors.job_list,
)
