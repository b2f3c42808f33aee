"""POST /api/gateway/jobs/bulk/: enable, disable, reset and remove many gateway jobs, each
through its own service; a DELETE_PENDING job is refused with the service's reason and the
others are done."""

from __future__ import annotations

import pytest

from gateway import services as gw
from gateway.choices import JobStatus
from gateway.models import Job

pytestmark = pytest.mark.django_db

URL = "/api/gateway/jobs/bulk/"


@pytest.fixture
def jobs(admin_user, gw_queues, foreign_queue) -> list[Job]:
    return [
        gw.job_create(
            user=admin_user,
            job_name=f"JOB_{source}",
            propagation_type="OUTBOUND",
            source=source,
            destination="OUT_Q@RABBIT",
        )
        for source in ("ORDERS", "AUDIT", "EVENTS")
    ]


def _rows() -> list[tuple[str, bool, str, int]]:
    return list(Job.objects.order_by("name").values_list("name", "enabled", "status", "failures"))


def test_operator_disables_and_enables_many_jobs(operator_api, jobs):
    ids = [j.pk for j in jobs]

    disabled = operator_api.post(URL, {"action": "disable", "ids": ids})

    assert disabled.status_code == 200, disabled.content
    assert disabled.json()["done"] == 3
    assert not Job.objects.filter(enabled=True).exists()

    enabled = operator_api.post(URL, {"action": "enable", "ids": ids})

    assert enabled.status_code == 200, enabled.content
    assert Job.objects.filter(enabled=True).count() == 3


def test_a_delete_pending_job_is_refused_and_the_others_are_reset(operator_api, admin_user, jobs):
    gw.job_remove(user=admin_user, job=jobs[1])  # DELETE_PENDING until its agent cleans up
    before = _rows()

    response = operator_api.post(URL, {"action": "reset", "ids": [j.pk for j in jobs]})

    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["outcome"] for r in body["results"]] == ["done", "refused", "done"]
    assert body["results"][1]["detail"] == (
        "Job JOB_AUDIT is DELETE_PENDING: only REMOVE_JOB applies to it."
    )
    assert body["results"][1]["code"] == "conflict"
    audit = [row for row in _rows() if row[0] == "JOB_AUDIT"]
    assert audit == [row for row in before if row[0] == "JOB_AUDIT"]
    assert audit[0][2] == JobStatus.DELETE_PENDING


def test_administrator_removes_many_jobs_which_go_delete_pending(admin_api, jobs):
    response = admin_api.post(URL, {"action": "delete", "ids": [jobs[0].pk, jobs[2].pk]})

    assert response.status_code == 200, response.content
    assert response.json()["done"] == 2
    statuses = dict(Job.objects.values_list("name", "status"))
    assert statuses["JOB_ORDERS"] == statuses["JOB_EVENTS"] == JobStatus.DELETE_PENDING
    assert statuses["JOB_AUDIT"] != JobStatus.DELETE_PENDING


def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(operator_api, jobs):
    before = _rows()

    bad_action = operator_api.post(URL, {"action": "remove", "ids": [jobs[0].pk]})
    bad_ids = operator_api.post(URL, {"action": "disable", "ids": [jobs[0].pk, "x"]})
    no_ids = operator_api.post(URL, {"action": "disable", "ids": []})

    assert (bad_action.status_code, list(bad_action.json())) == (400, ["action"])
    assert (bad_ids.status_code, bad_ids.json()) == (400, {"ids": ["'x' is not an id."]})
    assert (no_ids.status_code, no_ids.json()) == (400, {"ids": ["Select at least one job."]})
    assert _rows() == before


def test_roles_are_those_of_the_single_job_actions(monitor_api, operator_api, jobs):
    before = _rows()
    ids = [j.pk for j in jobs]

    assert monitor_api.post(URL, {"action": "disable", "ids": ids}).status_code == 403
    assert operator_api.post(URL, {"action": "delete", "ids": ids}).status_code == 403
    assert _rows() == before
