"""Bad input to a bulk job: what the definition gets wrong is refused at submission, naming the
field, with no job row written; what only the run can find (an empty source, an unreachable
master) fails the job row with the reason before Spark starts. Nothing is half-moved."""

from __future__ import annotations

import pytest

from core.exceptions import DomainError
from jobs import services
from jobs.models import SparkJob
from queues import services as qs
from queues.models import Message

from .helpers import enqueue
from .spark_helpers import eager_tasks, submit

__all__ = ["eager_tasks"]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def topo(admin_user, mc_table, sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    msrc = make_queue("MSRC", mc_table)
    typed = qs.queue_table_create(
        user=admin_user,
        name="QT_TYPED",
        sort_order="enq_time",
        payload_type="ORDER_T",
        payload_schema={"type": "object", "required": ["id"]},
    )
    tq = make_queue("TYPED", typed)
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=msrc, destination_queue=dst, schedule=False
    )
    enqueue(src, [{"n": 1}])
    return {"src": src, "dst": dst, "msrc": msrc, "typed": tq, "p": p}


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"source_queue": None}, "source_queue", "source queue"),
        ({"destinations": []}, "destinations", "at least one destination"),
        ({"destinations": ["src"]}, "destinations[0]", "its own destination"),
        ({"destinations": ["exc"]}, "destinations[0]", "exception queue"),
        ({"destinations": ["typed"]}, "destinations[0]", "ORDER_T"),
        ({"destinations": [], "propagations": ["p"]}, "propagations[0]", "goes out of MSRC"),
        ({"selection": "CONDITION", "condition": ":msg.n = "}, "condition", "line 1"),
        ({"selection": "CONDITION", "condition": ":nope.n = 1"}, "condition", "nope"),
        ({"selection": "CORRELATION"}, "correlation", "correlation"),
        ({"selection": "ENQ_TIME_RANGE"}, "enq_time_from", "range"),
        ({"mode": "TELEPORT"}, "mode", "COPY or MOVE"),
        ({"executor_memory": "lots"}, "executor_memory", "memory size"),
        ({"executor_memory": "\u0662g"}, "executor_memory", "memory size"),
        ({"executors": 0}, "executors", "1 to"),
        ({"executor_cores": 1000}, "executor_cores", "1 to"),
        ({"master": "http://127.0.0.1:8080"}, "master", "spark://"),
        # Well-formed but out of range: the run failed later with a ValueError or a Java
        # NumberFormatException instead.
        ({"master": "spark://127.0.0.1:99999999999"}, "master", "port"),
        ({"master": "spark://127.0.0.1:0"}, "master", "port"),
        ({"master": "local[99999999999999999999]"}, "master", "threads"),
        ({"master": "local[0]"}, "master", "threads"),
        ({"master": "local[2,99999999999999999999]"}, "master", "failures"),
        ({"master": "local[\u0661]"}, "master", "spark://"),
    ],
)
def test_a_bad_definition_names_the_field_and_writes_nothing(topo, admin_user, kw, field, words):
    args = {"source_queue": topo["src"], "destinations": [topo["dst"]], **kw}
    names = {"src": topo["src"], "typed": topo["typed"], "exc": topo["src"].exception_queue}
    args["destinations"] = [
        names.get(d, d) if isinstance(d, str) else d for d in args["destinations"]
    ]
    args["propagations"] = [topo[x] for x in args.get("propagations", [])]
    with pytest.raises(DomainError) as err:
        services.spark_job_submit(user=admin_user, **args)
    assert err.value.field == field
    assert words.lower() in str(err.value).lower()
    assert not SparkJob.objects.exists()


def test_moving_out_of_a_multi_consumer_queue_needs_propagations(topo, admin_user):
    with pytest.raises(DomainError) as err:
        services.spark_job_submit(
            user=admin_user, source_queue=topo["msrc"], destinations=[topo["src"]], mode="MOVE"
        )
    assert err.value.field == "destinations" and "propagations" in str(err.value)


def test_a_monitor_may_not_submit(topo, monitor_user):
    from core.exceptions import Forbidden

    with pytest.raises(Forbidden):
        services.spark_job_submit(
            user=monitor_user, source_queue=topo["src"], destinations=[topo["dst"]]
        )
    assert not SparkJob.objects.exists()


def test_an_unreachable_master_fails_the_job_before_spark_starts(eager_tasks, topo):
    job = submit(source_queue=topo["src"], destinations=[topo["dst"]], master="spark://127.0.0.1:9")
    assert job.state == "FAILED"
    assert "spark://127.0.0.1:9 is unreachable" in job.error
    assert job.app_id == "" and job.driver_log_tail == ""
    assert not Message.objects.filter(queue=topo["dst"]).exists()


def test_an_empty_selection_fails_the_job_with_the_reason(eager_tasks, topo):
    job = submit(
        source_queue=topo["src"],
        destinations=[topo["dst"]],
        selection="CORRELATION",
        correlation="NONE",
    )
    assert job.state == "FAILED" and "holds no message this job selects" in job.error
    assert Message.objects.filter(queue=topo["src"], state="READY").count() == 1
