"""The same bulk job on a real standalone cluster (master and worker on 127.0.0.1): the master
gives the application an ``app-`` id and the worker's executors run it; a job that asks for
more than any worker has fails before anything moves, naming the field."""

from __future__ import annotations

import pytest

from queues.models import Message

from .helpers import enqueue
from .spark_helpers import eager_tasks, job_totals, source_ids_at, submit

__all__ = ["eager_tasks"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark_cluster]


@pytest.fixture
def cluster_ui(settings, spark_cluster):
    settings.AQ_SPARK = {**settings.AQ_SPARK, "MASTER_UI_URL": spark_cluster.ui_url}
    return spark_cluster


def test_a_job_moves_a_backlog_on_the_cluster(
    eager_tasks, cluster_ui, admin_user, mc_table, sc_table, make_queue, rule_set
):
    from jobs import services

    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=dst,
        positive_rule_set=rule_set("RS", ":msg.n > 9"),
        schedule=False,
    )
    ids = enqueue(src, [{"n": i} for i in range(40)])
    job = submit(
        source_queue=src,
        propagations=[p],
        mode="MOVE",
        master=cluster_ui.master_url,
        executor_memory="512m",
        executor_cores=1,
        executors=2,
    )

    assert job.state == "SUCCEEDED", job.error + job.driver_log_tail[-3000:]
    assert job.app_id.startswith("app-")
    assert source_ids_at(dst) == ids[10:]
    assert not Message.objects.filter(queue=src, state="READY").exists()
    assert job_totals(job)["propagated"] == {"DST": 30}
    apps = cluster_ui.state()["completedapps"]
    assert any(a["id"] == job.app_id for a in apps)


def test_asking_for_more_memory_than_a_worker_has_fails_before_submitting(
    eager_tasks, cluster_ui, sc_table, make_queue
):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    enqueue(src, [{"n": 1}])
    job = submit(
        source_queue=src, destinations=[dst], master=cluster_ui.master_url, executor_memory="64g"
    )
    assert job.state == "FAILED"
    assert "64g" in job.error and "does not fit on any worker" in job.error
    assert job.app_id == "" and not Message.objects.filter(queue=dst).exists()
