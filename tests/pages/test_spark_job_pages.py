"""The Spark job pages: list, submit form and detail open for every role; the form's bad input is
a 400 naming the field; buttons follow the role and the job's state; the list costs the same
number of queries whatever its size.

No job runs here: submitting sends its Celery task after commit, and these tests' transactions
never commit, so every job stays as the services leave it.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import services
from jobs.models import SparkJob, SparkJobPart
from queues import services as qs


@pytest.fixture
def spark_queues(admin_user) -> dict[str, Any]:
    """SRC, DST1 and DST2 (single-consumer); MSRC (multi-consumer) with P_MSRC_DST1 out of it."""
    sc = qs.queue_table_create(user=admin_user, name="QT_SC", sort_order="enq_time")
    mc = qs.queue_table_create(
        user=admin_user, name="QT_MC", sort_order="enq_time", multiple_consumers=True
    )
    out = {
        name.lower(): qs.queue_create(user=admin_user, name=name, queue_table=sc)
        for name in ("SRC", "DST1", "DST2")
    }
    out["msrc"] = qs.queue_create(user=admin_user, name="MSRC", queue_table=mc)
    out["prop"] = services.propagation_create(
        user=admin_user, name="P_MSRC_DST1", source_queue=out["msrc"], destination_queue=out["dst1"]
    )
    out["src"].refresh_from_db()
    out["exq"] = out["src"].exception_queue
    return out


def _submit(user, queues: dict[str, Any], **kw: Any) -> SparkJob:  # type: ignore[no-untyped-def]
    kw.setdefault("destinations", [queues["dst1"], queues["dst2"]])
    return services.spark_job_submit(user=user, source_queue=queues["src"], **kw)


@pytest.fixture
def job(admin_user, spark_queues) -> SparkJob:
    return _submit(admin_user, spark_queues, name="nightly copy")


def _state(job: SparkJob, state: str, **fields: Any) -> SparkJob:
    SparkJob.objects.filter(pk=job.pk).update(state=state, **fields)
    job.refresh_from_db()
    return job


# --- every role ------------------------------------------------------------------------------

PAGES = [
    ("/spark/", "nightly copy"),
    ("/spark/?state=SUBMITTED&q=nightly", "nightly copy"),
    ("/spark/?state=FAILED", "No Spark jobs."),
    ("/spark/new/", 'id="spark-job-form"'),
    ("/spark/{pk}/", 'id="spark-status"'),
    ("/spark/{pk}/status/", 'id="spark-status"'),
]


@pytest.mark.parametrize("role", ["admin", "operator", "monitor"])
@pytest.mark.parametrize(("path", "marker"), PAGES)
def test_every_spark_page_opens_for_every_role(request, job, role, path, marker):
    client = request.getfixturevalue(f"{role}_client")

    response = client.get(path.format(pk=job.pk))

    assert response.status_code == 200
    assert marker in response.content.decode()


def test_the_bar_links_to_the_spark_jobs_instead_of_a_placeholder(monitor_client, job):
    html = monitor_client.get("/").content.decode()

    assert 'href="/spark/"' in html and ">Spark jobs<" in html
    assert monitor_client.get("/jobs/").url == "/spark/"


def test_the_list_shows_each_column(monitor_client, admin_user, spark_queues, job):
    _state(job, "RUNNING", tasks_done=3, tasks_total=4, app_id="app-1")
    SparkJobPart.objects.create(
        job=job, part_no=0, read=9, exceptions=2, propagated={"DST1": 4, "DST2": 3}
    )
    dry = _submit(admin_user, spark_queues, destinations=[spark_queues["dst2"]], dry_run=True)

    html = monitor_client.get("/spark/").content.decode()

    assert f'data-spark-job="{job.pk}"' in html and f'data-spark-job="{dry.pk}"' in html
    assert 'data-spark-state="RUNNING"' in html and "text-bg-primary" in html
    assert 'data-progress="3/4"' in html and "width: 75%" in html
    assert ">DST1</a>, <a" in html
    assert html.count("data-dry-run") == 1
    assert ">9<" in html and ">7<" in html  # read, propagated in all
    assert "alice" in html


def test_the_list_shows_each_jobs_phase_and_how_long_it_has_been_in_it(
    monitor_client, admin_user, spark_queues, job
):
    from django.utils import timezone

    since = (timezone.now() - timezone.timedelta(hours=3)).isoformat()
    _state(job, "RUNNING", phase="WRITING", phase_at={"WRITING": since})
    done = _submit(admin_user, spark_queues, destinations=[spark_queues["dst2"]])
    _state(done, "SUCCEEDED", phase="SUCCEEDED", phase_at={"SUCCEEDED": since})

    # The table's own poll (a fragment) carries it, so the column moves with the job.
    html = monitor_client.get("/spark/", HTTP_HX_REQUEST="true").content.decode()

    assert ">Phase<" in html
    row = html.split(f'data-spark-job="{job.pk}"', 1)[1].split("</tr>", 1)[0]
    assert '<span data-spark-phase="WRITING">Writing</span>' in row
    assert "(for 3.0 h)" in row
    finished = html.split(f'data-spark-job="{done.pk}"', 1)[1].split("</tr>", 1)[0]
    # A finished job's phase is its state; how long it has been finished is not a phase's age.
    assert 'data-spark-phase="SUCCEEDED"' in finished and "(for " not in finished


def test_the_list_table_is_a_fragment_that_polls_itself_with_its_filters(monitor_client, job):
    html = monitor_client.get("/spark/?state=SUBMITTED", HTTP_HX_REQUEST="true").content.decode()

    assert "<html" not in html
    assert 'hx-trigger="every 3s"' in html
    assert 'hx-get="/spark/?state=SUBMITTED"' in html


@pytest.mark.parametrize(
    "path",
    [
        "/spark/?state=EXPLODED",
        "/spark/?mode=TELEPORT",
        "/spark/?dry_run=perhaps",
        "/spark/?source_queue=abc",
        "/spark/?sort=nope",
        "/spark/?sort=-progress",
        "/spark/?sort=submitted",
        "/spark/?page=999",
        "/spark/?page=abc",
        "/spark/?per_page=-5",
        "/spark/999999/",
        "/spark/999999/status/",
    ],
)
def test_the_spark_pages_survive_odd_parameters(monitor_client, job, path):
    response = monitor_client.get(path)

    assert response.status_code in (200, 400, 404)


# --- the submit form -------------------------------------------------------------------------


def _form(queues: dict[str, Any], **kw: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "source_queue": queues["src"].pk,
        "destinations": [queues["dst1"].pk],
        "selection": "ALL_READY",
        "mode": "COPY",
        "executors": 1,
        "executor_cores": 1,
        "executor_memory": "1g",
    }
    data.update(kw)
    return data


def test_only_roles_that_operate_see_the_submit_button(
    admin_client, operator_client, monitor_client, job
):
    assert 'href="/spark/new/"' in admin_client.get("/spark/").content.decode()
    assert 'href="/spark/new/"' in operator_client.get("/spark/").content.decode()
    assert 'href="/spark/new/"' not in monitor_client.get("/spark/").content.decode()


def test_the_form_shows_the_default_master(monitor_client, settings, job):
    settings.SPARK_MASTER = "spark://cluster.example:7077"

    html = monitor_client.get("/spark/new/").content.decode()

    assert 'placeholder="spark://cluster.example:7077"' in html
    assert 'id="spark-read-only"' in html


def test_an_operator_submits_a_dry_run_through_the_form(operator_client, spark_queues):
    response = operator_client.post(
        "/spark/new/",
        _form(
            spark_queues,
            name="look first",
            destinations=[spark_queues["dst1"].pk, spark_queues["dst2"].pk],
            selection="CONDITION",
            condition=":msg.region = 'EU'",
            dry_run="on",
            executors=2,
            executor_memory="512m",
        ),
    )

    job = SparkJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/spark/{job.pk}/"
    assert (job.name, job.state, job.dry_run, job.submitted_by) == (
        "look first",
        "SUBMITTED",
        True,
        "oscar",
    )
    assert (job.selection, job.condition, job.executors, job.executor_memory) == (
        "CONDITION",
        ":msg.region = 'EU'",
        2,
        "512m",
    )
    assert sorted(job.destinations.values_list("queue__name", flat=True)) == ["DST1", "DST2"]


def test_a_job_through_a_propagation_is_submitted_through_the_form(admin_client, spark_queues):
    response = admin_client.post(
        "/spark/new/",
        _form(
            spark_queues,
            source_queue=spark_queues["msrc"].pk,
            destinations=[],
            propagations=[spark_queues["prop"].pk],
            mode="MOVE",
        ),
    )

    assert response.status_code == 302
    d = SparkJob.objects.get().destinations.get()
    assert (d.queue.name, d.propagation.name) == ("DST1", "P_MSRC_DST1")


def _assert_form_error(response, field: str) -> str:  # type: ignore[no-untyped-def]
    html = response.content.decode()
    assert response.status_code == 400, html[:3000]
    assert f'data-field="{field}"' in html, html[:8000]
    return html


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source_queue": ""}, "source_queue"),
        ({"source_queue": "999999"}, "source_queue"),
        ({"destinations": []}, "destinations"),
        ({"destinations": ["{src}"]}, "destinations"),
        ({"destinations": ["{dst1}", "{src}"]}, "destinations"),
        ({"destinations": ["{exq}"]}, "destinations"),
        ({"propagations": ["{prop}"]}, "propagations"),
        ({"selection": "CONDITION", "condition": ":msg.region = = 'EU'"}, "condition"),
        ({"selection": "CORRELATION", "correlation": ""}, "correlation"),
        ({"selection": "ENQ_TIME_RANGE"}, "enq_time_from"),
        (
            {
                "selection": "ENQ_TIME_RANGE",
                "enq_time_from": "2026-01-02T00:00",
                "enq_time_to": "2026-01-01T00:00",
            },
            "enq_time_to",
        ),
        ({"enq_time_from": "yesterday"}, "enq_time_from"),
        ({"selection": "EVERYTHING"}, "selection"),
        ({"mode": "TELEPORT"}, "mode"),
        ({"executor_memory": "lots"}, "executor_memory"),
        ({"executors": "0"}, "executors"),
        ({"executors": "many"}, "executors"),
        ({"executor_cores": "0"}, "executor_cores"),
        ({"master": "http://x"}, "master"),
    ],
)
def test_bad_form_input_is_a_400_naming_the_field_and_writes_nothing(
    operator_client, spark_queues, change, field
):
    from core.models import ChangeLogEntry

    ids = {k: str(spark_queues[k].pk) for k in ("src", "dst1", "exq", "prop")}
    if "destinations" in change:
        change["destinations"] = [d.format(**ids) for d in change["destinations"]]
    if "propagations" in change:
        change["propagations"] = [p.format(**ids) for p in change["propagations"]]
    logged = ChangeLogEntry.objects.count()

    response = operator_client.post("/spark/new/", _form(spark_queues, **change))

    _assert_form_error(response, field)
    assert SparkJob.objects.count() == 0
    assert ChangeLogEntry.objects.count() == logged


def test_the_error_on_the_second_destination_names_its_place(operator_client, spark_queues):
    response = operator_client.post(
        "/spark/new/",
        _form(spark_queues, destinations=[spark_queues["dst1"].pk, spark_queues["src"].pk]),
    )

    html = _assert_form_error(response, "destinations")
    assert "A queue cannot be its own destination." in html


def test_a_monitor_may_not_submit(monitor_client, spark_queues):
    response = monitor_client.post("/spark/new/", _form(spark_queues))

    assert response.status_code == 403
    assert SparkJob.objects.count() == 0


# --- detail: what it shows, buttons by role and state -----------------------------------------


def test_the_detail_page_shows_the_job_its_counters_and_parts(monitor_client, job):
    _state(
        job,
        "FAILED",
        app_id="app-20260101-0007",
        attempt=2,
        worker="celery@w1",
        tasks_done=1,
        tasks_total=4,
        error="Traceback: <boom> & more",
        driver_log_tail="INFO line 1\nWARN line 2",
        master="local[2]",
        executors=3,
        executor_cores=2,
        executor_memory="2g",
    )
    SparkJobPart.objects.create(
        job=job, part_no=0, attempt=1, read=10, discarded=2, exceptions=1, gone=1,
        propagated={"DST1": 4, "DST2": 3},
    )  # fmt: skip
    SparkJobPart.objects.create(job=job, part_no=1, attempt=2, read=5, propagated={"DST1": 5})

    html = monitor_client.get(f"/spark/{job.pk}/").content.decode()

    assert 'data-spark-state="FAILED"' in html and "text-bg-danger" in html
    assert "app-20260101-0007" in html and "celery@w1" in html
    assert 'data-counter="read">15<' in html
    assert 'data-destination="DST1">DST1: 9<' in html
    assert 'data-destination="DST2">DST2: 3<' in html
    assert 'data-counter="discarded">2<' in html
    assert 'data-part="0"' in html and 'data-part="1"' in html
    assert '<pre class="border rounded bg-light p-2 small text-danger" id="spark-error"' in html
    assert "Traceback: &lt;boom&gt; &amp; more" in html
    assert "WARN line 2" in html
    assert "local[2]" in html and "3 \u00d7 2 cores, 2g" in html
    assert 'id="spark-attempt">2<' in html
    assert "hx-trigger" not in html.split('id="spark-status"', 1)[1].split(">", 1)[0]


def test_a_dry_run_shows_what_would_go_where(monitor_client, admin_user, spark_queues):
    job = _submit(admin_user, spark_queues, dry_run=True)
    _state(
        job,
        "SUCCEEDED",
        dry_run_result={"read": 12, "discarded": 2, "per_destination": {"DST1": 10, "DST2": 7}},
    )

    html = monitor_client.get(f"/spark/{job.pk}/").content.decode()

    table = html.split('id="spark-dry-run"', 1)[1].split("</table>", 1)[0]
    assert '<td>DST1</td><td class="text-end">10</td>' in table
    assert '<td>DST2</td><td class="text-end">7</td>' in table
    assert ">12<" in table and ">2<" in table


def test_a_live_job_polls_its_status_every_two_seconds(monitor_client, job):
    for state in ("SUBMITTED", "RUNNING"):
        _state(job, state)
        html = monitor_client.get(f"/spark/{job.pk}/status/").content.decode()
        assert f'hx-get="/spark/{job.pk}/status/" hx-trigger="every 2s"' in html
        assert "<html" not in html


def test_the_polled_status_of_a_running_job_shows_the_driver_log_tail_saved_so_far(
    monitor_client, job
):
    """The follower saves the tail while the driver runs (tests/jobs/…_while_the_job_runs.py);
    the page's poll shows it."""
    _state(job, "RUNNING", driver_log_tail="12:00:01 WARN reading part 3 of 9")

    html = monitor_client.get(f"/spark/{job.pk}/status/").content.decode()

    assert 'hx-trigger="every 2s"' in html
    log = html.split('id="spark-driver-log"', 1)[1].split("</pre>", 1)[0]
    assert "WARN reading part 3 of 9" in log


def _phase(client, job: SparkJob) -> str:  # type: ignore[no-untyped-def]
    html = client.get(f"/spark/{job.pk}/status/").content.decode()
    return html.split('id="spark-phase"', 1)[1].split("</dd>", 1)[0]


def test_the_phase_shows_before_spark_has_a_task_to_count(
    monitor_client, token_client, monitor_user, job
):
    # Submitted: the task waits for a worker; no "0 of 0 Spark tasks".
    queued = _phase(monitor_client, job)
    assert 'data-spark-phase="QUEUED"' in queued and "Submitted: task queued" in queued
    assert "(for " in queued
    progress = monitor_client.get(f"/spark/{job.pk}/status/").content.decode()
    assert "0 of 0" not in progress and "no Spark stage yet" in progress

    # A worker's task claims it (the service the task calls): Spark is starting.
    claimed = services.spark_job_claim(job.pk, job.attempt, worker="celery@w1", task_id="t1")
    starting = _phase(monitor_client, job)
    assert 'data-spark-phase="STARTING"' in starting and "Starting Spark" in starting
    assert "(for " in starting
    body = token_client(monitor_user).get(f"/api/spark-jobs/{job.pk}/").json()
    assert body["phase"] == "STARTING"
    assert set(body["phase_at"]) == {"QUEUED", "STARTING"}

    services.spark_job_update(claimed, phase="READING", tasks_done=1, tasks_total=4)
    assert "1 of 4 Spark tasks" in monitor_client.get(f"/spark/{job.pk}/status/").content.decode()
    assert 'data-spark-phase="READING"' in _phase(monitor_client, job)

    services.spark_job_finish(claimed, failed="boom")
    failed = _phase(monitor_client, job)
    assert 'data-spark-phase="FAILED"' in failed and "(for " not in failed
    body = token_client(monitor_user).get(f"/api/spark-jobs/{job.pk}/").json()
    assert (body["state"], body["phase"]) == ("FAILED", "FAILED")


def test_cancel_and_rerun_set_the_phase(operator_client, job):
    operator_client.post(f"/spark/{job.pk}/cancel/")
    job.refresh_from_db()
    assert (job.state, job.phase) == ("CANCELLED", "CANCELLED")

    operator_client.post(f"/spark/{job.pk}/rerun/")
    job.refresh_from_db()
    assert (job.state, job.phase, list(job.phase_at)) == ("SUBMITTED", "QUEUED", ["QUEUED"])


def _actions(client, job: SparkJob) -> str:  # type: ignore[no-untyped-def]
    return client.get(f"/spark/{job.pk}/").content.decode()


@pytest.mark.parametrize(
    ("state", "cancel", "rerun"),
    [
        ("SUBMITTED", True, False),
        ("RUNNING", True, False),
        ("SUCCEEDED", False, False),
        ("FAILED", False, True),
        ("CANCELLED", False, True),
    ],
)
def test_the_buttons_follow_the_state_for_those_who_operate(
    admin_client, operator_client, monitor_client, job, state, cancel, rerun
):
    _state(job, state)
    cancel_form = f'action="/spark/{job.pk}/cancel/"'
    rerun_form = f'action="/spark/{job.pk}/rerun/"'

    for client in (admin_client, operator_client):
        html = _actions(client, job)
        assert (cancel_form in html, rerun_form in html) == (cancel, rerun)
    html = _actions(monitor_client, job)
    assert cancel_form not in html and rerun_form not in html


def test_cancel_then_rerun_through_the_buttons(operator_client, job):
    cancelled = operator_client.post(f"/spark/{job.pk}/cancel/", follow=True)
    job.refresh_from_db()
    assert job.state == "CANCELLED"
    assert 'data-spark-state="CANCELLED"' in cancelled.content.decode()

    rerun = operator_client.post(f"/spark/{job.pk}/rerun/", follow=True)
    job.refresh_from_db()
    assert (job.state, job.attempt) == ("SUBMITTED", 2)
    assert "submitted again (attempt 2)" in rerun.content.decode()


@pytest.mark.parametrize(("state", "verb"), [("SUCCEEDED", "cancel"), ("RUNNING", "rerun")])
def test_a_button_the_state_no_longer_allows_shows_the_conflict(operator_client, job, state, verb):
    _state(job, state)

    response = operator_client.post(f"/spark/{job.pk}/{verb}/", follow=True)

    html = response.content.decode()
    assert response.status_code == 200
    assert "alert-danger" in html and f"is {state}" in html
    job.refresh_from_db()
    assert (job.state, job.attempt, job.cancel_requested) == (state, 1, False)


def test_a_monitor_may_not_cancel_or_rerun(monitor_client, job):
    assert monitor_client.post(f"/spark/{job.pk}/cancel/").status_code == 403
    _state(job, "FAILED")
    assert monitor_client.post(f"/spark/{job.pk}/rerun/").status_code == 403
    job.refresh_from_db()
    assert (job.state, job.attempt) == ("FAILED", 1)


def test_a_get_on_an_action_url_changes_nothing(operator_client, job):
    response = operator_client.get(f"/spark/{job.pk}/cancel/")

    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == "SUBMITTED"


# --- cost ------------------------------------------------------------------------------------


def _grow(user, queues: dict[str, Any], start: int, stop: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(start, stop):
        job = _submit(user, queues, name=f"job {i}", dry_run=bool(i % 2))
        for part in range(3):
            SparkJobPart.objects.create(
                job=job, part_no=part, read=10, propagated={"DST1": 4, "DST2": 3}
            )


def _count(client, path: str, **headers: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, **headers)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_the_list_page_costs_the_same_for_more_jobs(admin_client, admin_user, spark_queues):
    _grow(admin_user, spark_queues, 0, 4)
    small = _count(admin_client, "/spark/?per_page=4")
    small_fragment = _count(admin_client, "/spark/?per_page=4", HTTP_HX_REQUEST="true")

    _grow(admin_user, spark_queues, 4, 40)
    large = _count(admin_client, "/spark/?per_page=40")
    html = admin_client.get("/spark/?per_page=40").content.decode()

    assert html.count("data-spark-job=") == 40
    assert large == small
    assert _count(admin_client, "/spark/?per_page=40", HTTP_HX_REQUEST="true") == small_fragment


def test_the_detail_page_costs_the_same_for_more_parts(monitor_client, job):
    SparkJobPart.objects.create(job=job, part_no=0, read=1, propagated={"DST1": 1})
    small = _count(monitor_client, f"/spark/{job.pk}/")

    for part in range(1, 40):
        SparkJobPart.objects.create(job=job, part_no=part, read=1, propagated={"DST1": 1})
    large = _count(monitor_client, f"/spark/{job.pk}/")

    assert large == small
