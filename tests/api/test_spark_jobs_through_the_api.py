"""Spark bulk propagation jobs through the API: submit, list with filters, follow, cancel, re-run;
roles; bad input is a 400 naming the field; counters are the sums of the committed parts.

No job runs here: submitting sends its Celery task after commit, and these tests' transactions
never commit (``django_db``), so every job stays as the services leave it.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import services
from jobs.models import SparkJob, SparkJobPart

pytestmark = pytest.mark.django_db


@pytest.fixture
def spark_topology(admin_user, sc_table, mc_table, make_queue) -> dict[str, Any]:
    """SRC, DST1 and DST2 in a single-consumer table; MSRC (multi-consumer) with a propagation
    P_MSRC_DST1 out of it; and SRC's exception queue."""
    src = make_queue("SRC", sc_table)
    dst1, dst2 = make_queue("DST1", sc_table), make_queue("DST2", sc_table)
    msrc = make_queue("MSRC", mc_table)
    prop = services.propagation_create(
        user=admin_user, name="P_MSRC_DST1", source_queue=msrc, destination_queue=dst1
    )
    src.refresh_from_db()
    return {
        "src": src,
        "dst1": dst1,
        "dst2": dst2,
        "msrc": msrc,
        "prop": prop,
        "exq": src.exception_queue,
    }


def _submit(user, topo: dict[str, Any], **kw: Any) -> SparkJob:  # type: ignore[no-untyped-def]
    args: dict[str, Any] = {
        "source_queue": topo["src"],
        "destinations": [topo["dst1"], topo["dst2"]],
    }
    args.update(kw)
    return services.spark_job_submit(user=user, **args)


def _jobs() -> list[tuple[Any, ...]]:
    return sorted(SparkJob.objects.values_list("id", "state", "attempt", "cancel_requested"))


# --- submit ---------------------------------------------------------------------------------


def test_an_operator_submits_a_job_by_queue_names(operator_api, spark_topology):
    response = operator_api.post(
        "/api/spark-jobs/",
        {
            "name": "backfill",
            "source_queue": "src",
            "destinations": ["DST1", spark_topology["dst2"].pk],
            "selection": "CORRELATION",
            "correlation": "ORD-%",
            "dry_run": True,
            "master": "local[2]",
            "executors": 2,
            "executor_cores": 2,
            "executor_memory": "512m",
        },
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "SUBMITTED"
    assert body["attempt"] == 1
    assert body["source_queue"] == "SRC"
    assert [d["queue"] for d in body["destinations"]] == ["DST1", "DST2"]
    assert body["submitted_by"] == "oscar"
    assert (body["selection"], body["correlation"], body["dry_run"]) == (
        "CORRELATION",
        "ORD-%",
        True,
    )
    assert (body["master"], body["executors"], body["executor_memory"]) == ("local[2]", 2, "512m")
    assert body["propagated"] == {"DST1": 0, "DST2": 0}
    assert body["parts"] == []
    assert SparkJob.objects.get(pk=body["id"]).name == "backfill"


def test_a_job_through_a_propagation_names_it_as_a_destination(admin_api, spark_topology):
    response = admin_api.post(
        "/api/spark-jobs/",
        {"source_queue": "MSRC", "propagations": ["P_MSRC_DST1"], "mode": "MOVE"},
    )

    assert response.status_code == 201, response.json()
    assert response.json()["destinations"] == [
        {"queue": "DST1", "propagation": "P_MSRC_DST1", "position": 0}
    ]
    assert response.json()["mode"] == "MOVE"


def _body(topo: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"source_queue": "SRC", "destinations": ["DST1"], **kw}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source_queue": "NO_SUCH_QUEUE"}, "source_queue"),
        ({"source_queue": ""}, "source_queue"),
        ({"destinations": []}, "destinations"),
        ({"destinations": ["SRC"]}, "destinations[0]"),
        ({"destinations": ["DST1", "{exq}"]}, "destinations[1]"),
        ({"destinations": ["NOPE"]}, "destinations[0]"),
        ({"destinations": ["DST1", "DST1"]}, "destinations"),
        ({"propagations": ["P_MSRC_DST1"]}, "propagations[0]"),
        ({"selection": "CONDITION", "condition": ":msg.region = = 'EU'"}, "condition"),
        ({"selection": "CONDITION", "condition": ""}, "condition"),
        ({"selection": "CORRELATION"}, "correlation"),
        ({"selection": "ENQ_TIME_RANGE"}, "enq_time_from"),
        ({"selection": "EVERYTHING"}, "selection"),
        ({"mode": "TELEPORT"}, "mode"),
        ({"executor_memory": "lots"}, "executor_memory"),
        ({"executor_memory": "1m"}, "executor_memory"),
        ({"executors": 0}, "executors"),
        ({"executors": 10_000}, "executors"),
        ({"executor_cores": 0}, "executor_cores"),
        ({"master": "http://x"}, "master"),
        ({"enq_time_from": "yesterday"}, "enq_time_from"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    operator_api, spark_topology, change, field
):
    from core.models import ChangeLogEntry

    exq = spark_topology["exq"].name
    body = _body(spark_topology, **change)
    body["destinations"] = [d.replace("{exq}", exq) for d in body["destinations"]]
    logged = ChangeLogEntry.objects.count()

    response = operator_api.post("/api/spark-jobs/", body)

    assert response.status_code == 400, response.json()
    assert field in response.json(), response.json()
    assert SparkJob.objects.count() == 0
    assert ChangeLogEntry.objects.count() == logged


def test_the_time_range_must_not_end_before_it_starts(operator_api, spark_topology):
    response = operator_api.post(
        "/api/spark-jobs/",
        _body(
            spark_topology,
            selection="ENQ_TIME_RANGE",
            enq_time_from="2026-01-02T00:00:00Z",
            enq_time_to="2026-01-01T00:00:00Z",
        ),
    )

    assert response.status_code == 400
    assert "enq_time_to" in response.json()


# --- roles ------------------------------------------------------------------------------------


def test_a_monitor_reads_jobs_but_cannot_submit_cancel_or_rerun(
    monitor_api, admin_user, spark_topology
):
    submitted = _submit(admin_user, spark_topology)
    cancelled = _submit(admin_user, spark_topology)
    services.spark_job_cancel(user=admin_user, job=cancelled)
    before = _jobs()

    assert monitor_api.get("/api/spark-jobs/").status_code == 200
    assert monitor_api.get(f"/api/spark-jobs/{submitted.pk}/").status_code == 200
    refused = [
        monitor_api.post("/api/spark-jobs/", _body(spark_topology)),
        monitor_api.post(f"/api/spark-jobs/{submitted.pk}/cancel/"),
        monitor_api.post(f"/api/spark-jobs/{cancelled.pk}/rerun/"),
    ]

    assert [r.status_code for r in refused] == [403, 403, 403]
    assert _jobs() == before


def test_an_anonymous_client_gets_nothing(token_client, admin_user, spark_topology):
    job = _submit(admin_user, spark_topology)
    anonymous = token_client(None)

    assert anonymous.get("/api/spark-jobs/").status_code in (401, 403)
    assert anonymous.post(f"/api/spark-jobs/{job.pk}/cancel/").status_code in (401, 403)
    assert SparkJob.objects.get(pk=job.pk).state == "SUBMITTED"


def test_a_job_is_neither_changed_nor_deleted_through_the_api(
    admin_api, admin_user, spark_topology
):
    job = _submit(admin_user, spark_topology)

    assert admin_api.patch(f"/api/spark-jobs/{job.pk}/", {"name": "x"}).status_code == 405
    assert admin_api.put(f"/api/spark-jobs/{job.pk}/", {"name": "x"}).status_code == 405
    assert admin_api.delete(f"/api/spark-jobs/{job.pk}/").status_code == 405
    assert SparkJob.objects.filter(pk=job.pk, name="").exists()


# --- cancel and re-run ------------------------------------------------------------------------


def test_cancelling_a_submitted_job_cancels_it_at_once(operator_api, admin_user, spark_topology):
    job = _submit(admin_user, spark_topology)

    response = operator_api.post(f"/api/spark-jobs/{job.pk}/cancel/")

    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "CANCELLED"
    assert response.json()["cancel_requested"] is True
    assert response.json()["finished_at"] is not None
    assert SparkJob.objects.get(pk=job.pk).state == "CANCELLED"


def test_a_cancelled_job_is_re_run_as_its_second_attempt(operator_api, admin_user, spark_topology):
    job = _submit(admin_user, spark_topology)
    services.spark_job_cancel(user=admin_user, job=job)

    response = operator_api.post(f"/api/spark-jobs/{job.pk}/rerun/")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["state"], body["attempt"], body["cancel_requested"]) == ("SUBMITTED", 2, False)
    assert body["finished_at"] is None


def test_a_failed_job_is_re_run(operator_api, admin_user, spark_topology):
    job = _submit(admin_user, spark_topology)
    SparkJob.objects.filter(pk=job.pk).update(state="FAILED", error="driver exited with 1")

    response = operator_api.post(f"/api/spark-jobs/{job.pk}/rerun/")

    assert response.status_code == 200
    assert (response.json()["state"], response.json()["error"]) == ("SUBMITTED", "")


@pytest.mark.parametrize(
    ("state", "verb"),
    [
        ("SUBMITTED", "rerun"),
        ("RUNNING", "rerun"),
        ("SUCCEEDED", "rerun"),
        ("SUCCEEDED", "cancel"),
        ("FAILED", "cancel"),
        ("CANCELLED", "cancel"),
    ],
)
def test_a_verb_the_state_does_not_allow_is_a_409_that_changes_nothing(
    operator_api, admin_user, spark_topology, state, verb
):
    job = _submit(admin_user, spark_topology)
    SparkJob.objects.filter(pk=job.pk).update(state=state)
    before = _jobs()

    response = operator_api.post(f"/api/spark-jobs/{job.pk}/{verb}/")

    assert response.status_code == 409, response.json()
    assert response.json()["code"] == "conflict"
    assert state in response.json()["detail"]
    assert _jobs() == before


def test_an_unknown_job_is_a_404(operator_api, spark_topology):
    assert operator_api.get("/api/spark-jobs/999999/").status_code == 404
    assert operator_api.post("/api/spark-jobs/999999/cancel/").status_code == 404
    assert operator_api.get("/api/spark-jobs/abc/").status_code == 404


# --- reading: counters, list filters ---------------------------------------------------------


def test_counters_are_the_sums_of_the_committed_parts(monitor_api, admin_user, spark_topology):
    job = _submit(admin_user, spark_topology)
    SparkJob.objects.filter(pk=job.pk).update(
        state="RUNNING", app_id="app-20260101-0001", tasks_done=2, tasks_total=4
    )
    now = timezone.now()
    SparkJobPart.objects.create(
        job=job, part_no=0, attempt=1, read=10, discarded=2, exceptions=1, gone=0,
        propagated={"DST1": 7, "DST2": 5}, done_at=now,
    )  # fmt: skip
    SparkJobPart.objects.create(
        job=job, part_no=1, attempt=1, read=6, discarded=0, exceptions=0, gone=1,
        propagated={"DST1": 5}, done_at=now,
    )  # fmt: skip

    one = monitor_api.get(f"/api/spark-jobs/{job.pk}/").json()
    [row] = monitor_api.get("/api/spark-jobs/").json()["results"]

    assert (one["read"], one["discarded"], one["exceptions"], one["gone"]) == (16, 2, 1, 1)
    assert one["propagated"] == {"DST1": 12, "DST2": 5}
    assert one["propagated_total"] == 17
    assert [(p["part_no"], p["read"], p["propagated"]) for p in one["parts"]] == [
        (0, 10, {"DST1": 7, "DST2": 5}),
        (1, 6, {"DST1": 5}),
    ]
    assert (one["app_id"], one["tasks_done"], one["tasks_total"]) == ("app-20260101-0001", 2, 4)
    assert {k: row[k] for k in ("read", "discarded", "exceptions", "gone", "propagated_total")} == {
        "read": 16,
        "discarded": 2,
        "exceptions": 1,
        "gone": 1,
        "propagated_total": 17,
    }


def test_a_job_without_parts_counts_zero(monitor_api, admin_user, spark_topology):
    job = _submit(admin_user, spark_topology)

    [row] = monitor_api.get("/api/spark-jobs/").json()["results"]

    assert row["id"] == job.pk
    assert (row["read"], row["propagated_total"], row["duration"]) == (0, 0, None)


@pytest.fixture
def several_jobs(admin_user, operator_user, spark_topology) -> dict[str, SparkJob]:
    a = _submit(admin_user, spark_topology, name="nightly copy")
    b = _submit(operator_user, spark_topology, name="dry look", dry_run=True)
    c = services.spark_job_submit(
        user=operator_user,
        source_queue=spark_topology["msrc"],
        propagations=[spark_topology["prop"]],
        mode="MOVE",
        name="drain msrc",
    )
    services.spark_job_cancel(user=admin_user, job=b)
    SparkJob.objects.filter(pk=c.pk).update(state="RUNNING", app_id="app-20260101-0042")
    return {"a": a, "b": b, "c": c}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["a", "b", "c"]),
        ("state=SUBMITTED", ["a"]),
        ("state=SUBMITTED&state=RUNNING", ["a", "c"]),
        ("state=CANCELLED", ["b"]),
        ("mode=MOVE", ["c"]),
        ("dry_run=true", ["b"]),
        ("dry_run=false", ["a", "c"]),
        ("submitted_by=OSCAR", ["b", "c"]),
        ("q=nightly", ["a"]),
        ("q=0042", ["c"]),
        ("q=msrc", ["c"]),
        ("source_queue={src}", ["a", "b"]),
    ],
)
def test_the_list_filters_like_the_page(monitor_api, several_jobs, spark_topology, query, expected):
    query = query.format(src=spark_topology["src"].pk)

    response = monitor_api.get(f"/api/spark-jobs/?{query}")

    assert response.status_code == 200, response.json()
    ids = {r["id"] for r in response.json()["results"]}
    assert ids == {several_jobs[k].pk for k in expected}


def test_the_list_is_newest_first_and_ordered_on_request(monitor_api, several_jobs):
    ids = [r["id"] for r in monitor_api.get("/api/spark-jobs/").json()["results"]]
    ordered = [r["id"] for r in monitor_api.get("/api/spark-jobs/?ordering=id").json()["results"]]

    assert ids == sorted(ids, reverse=True)
    assert ordered == sorted(ids)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=EXPLODED", "state"),
        ("mode=TELEPORT", "mode"),
        ("source_queue=abc", "source_queue"),
        ("source_queue=999999", "source_queue"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(monitor_api, several_jobs, query, field):
    response = monitor_api.get(f"/api/spark-jobs/?{query}")

    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.parametrize(
    "query", ["dry_run=perhaps", "ordering=nope", "limit=abc", "offset=-1", "limit=100000"]
)
def test_odd_paging_ordering_and_booleans_are_ignored(monitor_api, several_jobs, query):
    response = monitor_api.get(f"/api/spark-jobs/?{query}")

    assert response.status_code == 200
    assert len(response.json()["results"]) == 3


# --- cost ------------------------------------------------------------------------------------


def _grow(user, topo: dict[str, Any], start: int, stop: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(start, stop):
        job = _submit(user, topo, name=f"job {i}", dry_run=bool(i % 2))
        for part in range(3):
            SparkJobPart.objects.create(
                job=job, part_no=part, read=10, propagated={"DST1": 4, "DST2": 3}
            )


def _count(client, path: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, response.json()
    return len(ctx.captured_queries), len(response.json()["results"])


def test_the_list_costs_the_same_number_of_queries_for_more_jobs(
    monitor_api, admin_user, spark_topology
):
    _grow(admin_user, spark_topology, 0, 5)
    small, small_rows = _count(monitor_api, "/api/spark-jobs/?limit=5")

    _grow(admin_user, spark_topology, 5, 20)
    large, large_rows = _count(monitor_api, "/api/spark-jobs/?limit=20")

    assert (small_rows, large_rows) == (5, 20)
    assert large == small
    rows = monitor_api.get("/api/spark-jobs/?limit=20").json()["results"]
    assert {(r["read"], r["propagated_total"]) for r in rows} == {(30, 21)}


def test_one_job_costs_the_same_number_of_queries_for_more_parts(
    monitor_api, admin_user, spark_topology
):
    job = _submit(admin_user, spark_topology)
    SparkJobPart.objects.create(job=job, part_no=0, read=1, propagated={"DST1": 1})
    small, _ = _count_one(monitor_api, f"/api/spark-jobs/{job.pk}/")

    for part in range(1, 40):
        SparkJobPart.objects.create(job=job, part_no=part, read=1, propagated={"DST1": 1})
    large, body = _count_one(monitor_api, f"/api/spark-jobs/{job.pk}/")

    assert len(body["parts"]) == 40 and body["propagated"]["DST1"] == 40
    assert large == small


def _count_one(client, path: str) -> tuple[int, dict[str, Any]]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200
    return len(ctx.captured_queries), response.json()


def test_the_schema_documents_the_spark_job_endpoints(monitor_api):
    import yaml

    schema = yaml.safe_load(monitor_api.get("/api/schema/").content)
    paths = schema["paths"]

    assert {"get", "post"} <= set(paths["/api/spark-jobs/"])
    assert "get" in paths["/api/spark-jobs/{id}/"]
    assert not {"put", "patch", "delete"} & set(paths["/api/spark-jobs/{id}/"])
    assert "post" in paths["/api/spark-jobs/{id}/cancel/"]
    assert "post" in paths["/api/spark-jobs/{id}/rerun/"]
    enums = schema["components"]["schemas"]
    assert enums["SparkJobStateEnum"]["enum"] == [
        "SUBMITTED",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "CANCELLED",
    ]
