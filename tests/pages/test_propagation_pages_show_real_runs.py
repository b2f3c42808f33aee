"""A real window run in this process (as a Celery worker runs it) shows on the propagation's
page, in the runs list and in the counters."""

from __future__ import annotations

import pytest

from jobs import services
from queues.models import Message
from tests.jobs.helpers import enqueue, run_now

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_windows")]


def test_a_finished_run_shows_in_the_history_and_the_runs_list(
    monitor_client, admin_user, propagation_queues
):
    q = propagation_queues
    p = services.propagation_create(
        user=admin_user,
        name="P_EU",
        source_queue=q["src"],
        destination_queue=q["dst"],
        positive_rule_set=q["rule_set"],
    )
    enqueue(q["src"], [{"region": "EU"}, {"region": "US"}, {"region": "EU"}])
    before = monitor_client.get("/propagations/").content.decode()
    assert "P_EU" in before

    assert run_now(p) == ["SUCCEEDED: slice"]

    assert Message.objects.filter(queue=q["dst"], state="READY").count() == 2
    detail = monitor_client.get(f"/propagations/{p.pk}/status/").content.decode()
    assert 'data-run-state="SUCCEEDED"' in detail, detail[detail.find("<tbody") :][:3000]
    assert "2 messages" in detail  # the schedule's totals
    runs = monitor_client.get(f"/propagations/runs/?propagation={p.pk}").content.decode()
    assert 'data-run-state="SUCCEEDED"' in runs and "P_EU" in runs
