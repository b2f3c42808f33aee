"""Issue 16, defect 5: the propagation and Spark job forms (and the API) say every error of a
request at once; they used to show one, and each resubmit revealed the next. The checks are the
services' (one place for the form and the API), run all before anything is written."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def field_errors(html: str) -> set[str]:
    return set(re.findall(r'class="invalid-feedback d-block" data-field="([a-z_]+)"', html))


def test_the_propagation_form_and_api_name_every_bad_field(
    admin_client, admin_api, propagation, propagation_queues
):
    from jobs.models import Propagation

    q = propagation_queues
    data = {
        "name": propagation.name,  # taken
        "source_queue": q["src"].pk,
        "destination_queue": q["src"].pk,  # itself
        "positive_rule_set": q["rule_set"].pk,
        "negative_rule_set": q["rule_set"].pk,  # both
        "queue_to_queue": "on",
        "schedule_now": "on",
        "latency": "-1",  # negative
    }
    response = admin_client.post("/propagations/add/", data)
    assert response.status_code == 400
    assert field_errors(response.content.decode()) >= {
        "name",
        "destination_queue",
        "negative_rule_set",
        "latency",
    }

    body = {
        "name": propagation.name,
        "source_queue": "SRC",
        "destination_queue": "SRC",
        "positive_rule_set": "RS_EU",
        "negative_rule_set": "RS_EU",
        "latency": -1,
    }
    response = admin_api.post("/api/propagations/", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()) >= {"name", "destination_queue", "negative_rule_set", "latency"}
    assert Propagation.objects.count() == 1


def test_the_spark_job_form_and_api_name_every_bad_field(
    operator_client, operator_api, propagation_queues
):
    from jobs.models import SparkJob

    data = {
        "source_queue": propagation_queues["src"].pk,  # no destination
        "selection": "CORRELATION",  # without a correlation
        "mode": "COPY",
        "executors": "0",
        "executor_cores": "1",
        "executor_memory": "lots",
    }
    response = operator_client.post("/spark/new/", data)
    assert response.status_code == 400
    assert field_errors(response.content.decode()) >= {
        "destinations",
        "correlation",
        "executors",
        "executor_memory",
    }

    body = {
        "source_queue": "SRC",
        "selection": "CORRELATION",
        "executors": 0,
        "executor_memory": "lots",
    }
    response = operator_api.post("/api/spark-jobs/", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()) >= {"destinations", "correlation", "executors", "executor_memory"}
    assert not SparkJob.objects.exists()
