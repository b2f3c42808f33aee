"""A message that fails its transformation (or that the destination refuses) goes to the
source's exception queue with the reason; the window goes on with the others."""

from __future__ import annotations

import pytest

from jobs import services
from jobs.models import PropagationRun
from queues import services as qs
from queues.models import Message

from .helpers import enqueue, payloads_at, run_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def registry(settings):
    settings.AQ_TRANSFORMATIONS = {
        **settings.AQ_TRANSFORMATIONS,
        "EXPLODE_ON_POISON": "tests.jobs.transforms.explode_on_poison",
    }


def test_the_poisoned_message_goes_to_the_exception_queue_and_the_rest_move(
    registry, admin_user, mc_table, sc_table, make_queue, rule_set
):
    from rules import services as rs

    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    pos = rule_set("RS", ":msg.n >= 0")
    rs.custom_transformation_set(
        user=admin_user, rule=pos.rules.get(), function="EXPLODE_ON_POISON"
    )
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst, positive_rule_set=pos
    )
    enqueue(src, [{"n": 0}, {"n": 1, "poison": True}, {"n": 2}])
    run_now(p)

    assert payloads_at(dst) == [{"n": 0, "stamped": True}, {"n": 2, "stamped": True}]
    (exc,) = Message.objects.filter(queue=src.exception_queue)
    assert exc.payload == {"n": 1, "poison": True} and exc.original_queue_id == src.pk
    assert "poisoned payload" in exc.exception_reason and "(consumer P)" in exc.exception_reason
    run = PropagationRun.objects.filter(propagation=p).earliest("id")
    assert (run.propagated, run.exceptions, run.state) == (2, 1, "SUCCEEDED")
    # A replay gives it back to the propagation only.
    assert qs.exception_queue_replay(user=admin_user, queue=src.exception_queue) == 1
    assert Message.objects.get(queue=src, state="READY").consumers.get().subscriber.name == "P"


def test_a_message_the_destination_refuses_goes_to_the_exception_queue(
    registry, admin_user, make_queue, rule_set
):
    from rules import services as rs

    typed = qs.queue_table_create(
        user=admin_user,
        name="QT_T",
        sort_order="enq_time",
        multiple_consumers=True,
        payload_type="ORDER_T",
        payload_schema={"type": "object", "required": ["id"]},
    )
    typed2 = qs.queue_table_create(
        user=admin_user,
        name="QT_T2",
        sort_order="enq_time",
        payload_type="ORDER_T",
        payload_schema={"type": "object", "required": ["id"]},
    )
    src, dst = make_queue("SRC", typed), make_queue("DST", typed2)
    qs.subscriber_add(user=admin_user, queue=src, name="LOCAL")
    pos = rule_set("RS", ":msg.id > 0")
    rs.custom_transformation_set(
        user=admin_user, rule=pos.rules.get(), function="EXPLODE_ON_POISON"
    )
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst, positive_rule_set=pos
    )
    enqueue(src, [{"id": 1}, {"id": 2, "drop_id": True}, {"id": 3}])
    run_now(p)
    assert payloads_at(dst) == [{"id": 1, "stamped": True}, {"id": 3, "stamped": True}]
    (exc,) = Message.objects.filter(queue=src.exception_queue)
    assert exc.payload == {"id": 2, "drop_id": True}
    assert "DST refused it" in exc.exception_reason and "id" in exc.exception_reason
