"""A bulk job named by propagations moves their backlog as their runs would: each destination
gets what the propagation's rule sets decide (compile_spark in Spark, checked against the Python
engine's Table 5-1 on the same messages), the propagations' copies are consumed at the source and
other subscribers keep theirs, and transformations run as in a propagation's run."""

from __future__ import annotations

import json

import pytest

from jobs import services
from queues import engine
from queues import services as qs
from queues.models import Message, MessageConsumer
from rules.lang import message_from_queue
from rules.lang.pipeline import apply, message_content
from rules.selectors import rule_set_spec

from .helpers import enqueue
from .spark_helpers import eager_tasks, job_totals, submit

__all__ = ["eager_tasks"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark]

PAYLOADS = [
    {"region": "EUROPE", "priority": 1, "total": 10},
    {"region": "europe", "priority": 1, "total": 10},
    {"region": "EUROPE", "priority": 2, "total": 1_000},
    {"region": "ASIA", "priority": 1, "total": 5},
    {"REGION": "EUROPE", "priority": "1"},
    {"region": None, "priority": 1},
    {"priority": 3.5, "total": -1},
    {"region": "EUROPE", "priority": 1, "total": 123456789012345678901234567890},
    "just a string",
    [1, 2, 3],
    None,
    {"nested": {"Region": "EUROPE"}, "priority": 1},
]


def test_each_destination_gets_what_the_python_engine_decides(
    eager_tasks, admin_user, mc_table, sc_table, make_queue, rule_set
):
    src = make_queue("SRC", mc_table)
    d1, d2 = make_queue("D1", sc_table), make_queue("D2", sc_table)
    pos1 = rule_set("POS1", ":msg.region = 'EUROPE' AND :msg.priority = 1", ":msg.total > 100")
    neg1 = rule_set("NEG1", ":msg.total >= 1000")
    pos2 = rule_set("POS2", "UPPER(:msg.region) LIKE 'EUR%' OR :msg.nested.region = 'EUROPE'")
    p1 = services.propagation_create(
        user=admin_user,
        name="P1",
        source_queue=src,
        destination_queue=d1,
        positive_rule_set=pos1,
        negative_rule_set=neg1,
        schedule=False,
    )
    p2 = services.propagation_create(
        user=admin_user,
        name="P2",
        source_queue=src,
        destination_queue=d2,
        positive_rule_set=pos2,
        schedule=False,
    )
    qs.subscriber_add(user=admin_user, queue=src, name="LOCAL")
    ids = enqueue(src, PAYLOADS * 20)
    expected = {}
    for prop, dst in ((p1, d1), (p2, d2)):
        pos = rule_set_spec(prop.positive_rule_set)
        neg = rule_set_spec(prop.negative_rule_set) if prop.negative_rule_set else None
        expected[dst.name] = sorted(
            mid
            for mid, payload in zip(ids, PAYLOADS * 20, strict=True)
            if apply(
                message_from_queue("USER", "", payload),
                positive=pos,
                negative=neg,
                transformations_for={},
            ).perform
        )
    assert expected["D1"] and expected["D2"] and expected["D1"] != expected["D2"]

    job = submit(source_queue=src, propagations=[p1, p2], mode="MOVE")

    assert job.state == "SUCCEEDED", job.error
    for dst in (d1, d2):
        got = sorted(Message.objects.filter(queue=dst).values_list("bulk_source_id", flat=True))
        assert got == expected[dst.name], dst.name
    # The propagations' copies are consumed, taken or discarded; the local subscriber keeps all.
    left = MessageConsumer.objects.filter(message__queue=src)
    assert sorted(left.values_list("message_id", flat=True)) == sorted(ids)
    assert set(left.values_list("subscriber__name", flat=True)) == {"LOCAL"}
    totals = job_totals(job)
    assert totals["read"] == len(ids)
    assert totals["propagated"] == {"D1": len(expected["D1"]), "D2": len(expected["D2"])}
    # A second run finds nothing of the propagations' left to take.
    again = services.spark_job_submit(user=None, source_queue=src, propagations=[p1], mode="MOVE")
    again.refresh_from_db()
    assert again.state == "FAILED" and "holds no message" in again.error


@pytest.fixture
def registry(settings):
    settings.AQ_TRANSFORMATIONS = {
        **settings.AQ_TRANSFORMATIONS,
        "EXPLODE_ON_POISON": "tests.jobs.transforms.explode_on_poison",
    }


def test_transformations_run_and_failures_go_to_the_exception_queue(
    eager_tasks, registry, admin_user, mc_table, sc_table, make_queue, rule_set
):
    from rules import services as rs

    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    pos = rule_set("RS", ":msg.n >= 0")
    rs.custom_transformation_set(
        user=admin_user, rule=pos.rules.get(), function="EXPLODE_ON_POISON"
    )
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=dst,
        positive_rule_set=pos,
        schedule=False,
    )
    enqueue(src, [{"n": 0}, {"n": 1, "poison": True}, {"n": 2}, {"n": -1}])

    job = submit(source_queue=src, propagations=[p], mode="MOVE")

    assert job.state == "SUCCEEDED", job.error
    got = sorted((m.payload for m in Message.objects.filter(queue=dst)), key=lambda x: x["n"])
    assert got == [{"n": 0, "stamped": True}, {"n": 2, "stamped": True}]
    (exc,) = Message.objects.filter(queue=src.exception_queue)
    assert exc.payload == {"n": 1, "poison": True} and exc.original_queue_id == src.pk
    assert (
        "poisoned payload" in exc.exception_reason and f"spark job {job.pk}" in exc.exception_reason
    )
    totals = job_totals(job)
    assert (totals["exceptions"], totals["discarded"], totals["propagated"]) == (1, 1, {"DST": 2})
    # The copy belongs to the propagation: a replay gives it back to it only.
    assert qs.exception_queue_replay(user=admin_user, queue=src.exception_queue) == 1
    assert Message.objects.get(queue=src, state="READY").consumers.get().subscriber.name == "P"


@pytest.fixture
def taggers(settings):
    settings.AQ_TRANSFORMATIONS = {
        **settings.AQ_TRANSFORMATIONS,
        "TAG_FIRST": "tests.jobs.transforms.tag_first",
        "TAG_SECOND": "tests.jobs.transforms.tag_second",
    }


def test_two_true_transforming_rules_pick_the_one_a_propagation_picks(
    eager_tasks, taggers, admin_user, mc_table, sc_table, make_queue
):
    from rules import services as rs
    from rules.selectors import rule_set_transformations

    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    s = rs.rule_set_create(user=admin_user, name="RS")
    # Created in the reverse of their names' order: the set evaluates by name, not by age.
    for name, cond, fn in (
        ("R_B", ":msg.n >= 0", "TAG_SECOND"),
        ("R_A", ":msg.n >= 5", "TAG_FIRST"),
    ):
        r = rs.rule_create(user=admin_user, name=name, condition=cond)
        rs.rule_set_add_rule(user=admin_user, rule_set=s, rule=r)
        rs.custom_transformation_set(user=admin_user, rule=r, function=fn)
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=dst,
        positive_rule_set=s,
        schedule=False,
    )
    payloads = [{"n": i} for i in range(10)]
    enqueue(src, payloads)
    expected = [
        apply(
            message_from_queue("USER", "", x),
            positive=rule_set_spec(s),
            negative=None,
            transformations_for=rule_set_transformations(s),
        ).message_out.payload
        for x in payloads
    ]
    assert {e["by"] for e in expected} == {"first", "second"}

    job = submit(source_queue=src, propagations=[p], mode="MOVE")

    assert job.state == "SUCCEEDED", job.error
    got = sorted((m.payload for m in Message.objects.filter(queue=dst)), key=lambda x: x["n"])
    assert got == expected


def test_declarative_transformations_of_row_lcrs_match_the_pipeline(
    eager_tasks, admin_user, mc_table, sc_table, make_queue
):
    """Declarative steps run as Spark expressions (jobs/spark/declarative.py); a row they cannot
    render exactly (a float Java prints differently) goes through the Python pipeline."""
    from rules import services as rs
    from rules.selectors import rule_set_transformations

    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    s = rs.rule_set_create(user=admin_user, name="RS")
    r = rs.rule_create(user=admin_user, name="R_HR", condition=":dml.get_object_owner() = 'HR'")
    rs.rule_set_add_rule(user=admin_user, rule_set=s, rule=r)
    for kind, params in (
        ("RENAME COLUMN", {"from_column_name": "salary", "to_column_name": "pay"}),
        ("DELETE COLUMN", {"column_name": "email"}),
        ("ADD COLUMN", {"column_name": "origin", "column_value": "bulk"}),
        ("RENAME TABLE", {"from_table_name": "HR.EMPLOYEES", "to_table_name": "HR.STAFF"}),
    ):
        rs.transformation_add_declarative(user=admin_user, rule=r, declarative_type=kind, **params)
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=dst,
        positive_rule_set=s,
        schedule=False,
    )
    lcrs = [
        {
            "source_database_name": "DB1",
            "command_type": cmd,
            "object_owner": owner,
            "object_name": "EMPLOYEES",
            "old_values": {"EMPLOYEE_ID": i, "SALARY": salary, "EMAIL": "x@y"}
            if cmd != "INSERT"
            else {},
            "new_values": {"EMPLOYEE_ID": i, "SALARY": salary} if cmd != "DELETE" else {},
        }
        for i, (cmd, owner, salary) in enumerate(
            [
                ("INSERT", "HR", 100),
                ("UPDATE", "HR", 12345678901234567890123),
                ("DELETE", "HR", 0.1 + 0.2),  # Java prints it otherwise: the Python path
                ("UPDATE", "OE", 5),  # no rule is TRUE: discarded
                ("UPDATE", "HR", "7.5"),
            ]
        )
    ]
    qs.message_enqueue(
        user=None, queue=src, messages=[engine.NewMessage(payload=x, kind="ROW_LCR") for x in lcrs]
    )
    expected = []
    for x in lcrs:
        res = apply(
            message_from_queue("ROW_LCR", None, x),
            positive=rule_set_spec(s),
            negative=None,
            transformations_for=rule_set_transformations(s),
        )
        if res.perform:
            expected.append(message_content(res.message_out, type_name=None)[2])

    job = submit(source_queue=src, propagations=[p], mode="MOVE")

    assert job.state == "SUCCEEDED", job.error
    got = [m.payload for m in Message.objects.filter(queue=dst).order_by("bulk_source_id")]
    assert len(got) == 4 and all(m["object_name"] == "STAFF" for m in got)
    assert got == json.loads(json.dumps(expected))
    assert all("PAY" in (m["new_values"] or m["old_values"]) for m in got)
