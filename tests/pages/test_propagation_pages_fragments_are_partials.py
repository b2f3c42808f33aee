"""The live parts of the propagation pages are HTMX fragments: an HX-Request gets just the part,
which polls itself again."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from jobs import services
from jobs.models import PropagationRun, PropagationSchedule

HX = {"HTTP_HX_REQUEST": "true"}


def test_the_list_table_polls_itself_and_an_htmx_request_gets_only_the_table(
    monitor_client, propagation
):
    page = monitor_client.get("/propagations/?q=SRC").content.decode()
    assert 'hx-get="/propagations/?q=SRC"' in page and 'hx-trigger="every 3s"' in page

    fragment = monitor_client.get("/propagations/?q=SRC", **HX).content.decode()

    assert "<html" not in fragment and "<nav" not in fragment
    assert fragment.lstrip().startswith('<div id="propagation-table"')
    assert 'hx-get="/propagations/?q=SRC"' in fragment  # keeps polling with the same filters
    assert 'data-propagation="P_SRC_DST"' in fragment


def test_a_filtered_fragment_lists_only_matching_propagations(
    monitor_client, admin_user, propagation, propagation_queues
):
    services.propagation_create(
        user=admin_user,
        name="P_SRC_OTHER",
        source_queue=propagation_queues["src"],
        destination_queue=propagation_queues["other"],
        schedule=False,
    )

    fragment = monitor_client.get("/propagations/?state=unscheduled", **HX).content.decode()

    assert 'data-propagation="P_SRC_OTHER"' in fragment
    assert 'data-propagation="P_SRC_DST"' not in fragment


def test_the_status_fragment_is_a_partial_that_polls_itself(monitor_client, propagation):
    page = monitor_client.get(f"/propagations/{propagation.pk}/").content.decode()
    assert f'hx-get="/propagations/{propagation.pk}/status/"' in page

    fragment = monitor_client.get(f"/propagations/{propagation.pk}/status/", **HX)

    html = fragment.content.decode()
    assert fragment.status_code == 200
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="propagation-status"')
    assert 'data-state="' in html


def test_a_stuck_run_gets_a_clear_warning_with_its_worker(monitor_client, propagation, settings):
    now = timezone.now()
    silent = timedelta(seconds=settings.AQ_PROPAGATION["STUCK_S"] + 60)
    run = PropagationRun.objects.create(
        propagation=propagation,
        state="RUNNING",
        worker="celery@box1",
        pid=4242,
        session_id=777,
        started_at=now - silent * 2,
        heartbeat_at=now - silent,
    )
    PropagationSchedule.objects.filter(propagation=propagation).update(run=run)

    html = monitor_client.get(f"/propagations/{propagation.pk}/status/", **HX).content.decode()

    assert 'id="stuck-warning"' in html and "STUCK" in html
    assert "celery@box1" in html and "4242" in html and "777" in html
    assert 'data-state="stuck"' in html
    dashboard = monitor_client.get("/").content.decode()
    assert 'data-attention="stuck"' in dashboard


def test_a_running_run_with_a_fresh_heartbeat_is_not_stuck(monitor_client, propagation):
    now = timezone.now()
    run = PropagationRun.objects.create(
        propagation=propagation,
        state="RUNNING",
        worker="celery@box1",
        started_at=now,
        heartbeat_at=now,
    )
    PropagationSchedule.objects.filter(propagation=propagation).update(run=run)

    html = monitor_client.get(f"/propagations/{propagation.pk}/status/", **HX).content.decode()

    assert "stuck-warning" not in html
    assert 'data-state="running"' in html


def test_the_last_error_is_shown_in_full(monitor_client, propagation):
    error = "Traceback (most recent call last):\n" + "  line\n" * 40 + "psycopg.OperationalError: x"
    PropagationSchedule.objects.filter(propagation=propagation).update(
        failures=2, last_error_msg=error, last_error_at=timezone.now()
    )

    html = monitor_client.get(f"/propagations/{propagation.pk}/status/", **HX).content.decode()

    assert "psycopg.OperationalError: x</pre>" in html
    listing = monitor_client.get("/propagations/").content.decode()
    # The list's cell is short; its title holds the whole text.
    assert "…</span>" in listing and "psycopg.OperationalError: x" in listing


def test_the_workers_page_polls_a_fragment(monitor_client):
    now = timezone.now()
    services.worker_heartbeat(
        hostname="celery@box1",
        pid=99,
        queues=["celery", "propagation"],
        pool="prefork",
        concurrency=4,
        active=[{"id": "t1", "name": "jobs.tasks.propagation_run", "args": "[1]"}],
        processed=12,
        started_at=now,
    )

    page = monitor_client.get("/propagations/workers/").content.decode()
    fragment = monitor_client.get("/propagations/workers/", **HX).content.decode()

    assert "<nav" in page and 'hx-get="/propagations/workers/"' in page
    assert "<nav" not in fragment and fragment.lstrip().startswith('<div id="worker-table"')
    for text in ("celery@box1", "alive", "prefork", "celery, propagation", "propagation_run"):
        assert text in fragment, text


def test_the_totals_count_the_run_moving_messages_now(monitor_client, propagation):
    """Issue 16: the totals stayed 0 while a run moved messages (its counts fold into the
    schedule only when it ends)."""
    now = timezone.now()
    run = PropagationRun.objects.create(
        propagation=propagation,
        state="RUNNING",
        worker="celery@box1",
        started_at=now,
        heartbeat_at=now,
        messages=7,
        propagated=5,
        discarded=2,
    )
    PropagationSchedule.objects.filter(propagation=propagation).update(run=run)

    html = monitor_client.get(f"/propagations/{propagation.pk}/status/", **HX).content.decode()

    totals = html.split('id="propagation-totals">', 1)[1].split("</dd>", 1)[0]
    assert totals.startswith("5 messages")
    assert "0 runs and the current one" in totals and "2 discarded" in totals
