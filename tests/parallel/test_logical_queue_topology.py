"""A logical queue is created, rebuilt and dropped in one transaction through the queues
services: N queue tables with a ring of primary/secondary instances, N queues named without
instance ids, and the mapping; bad input is refused naming the field and leaves nothing."""

from __future__ import annotations

import pytest

from core.exceptions import DomainError
from parallel import services as ps
from parallel.models import LogicalQueue, LogicalQueuePartition
from queues import engine
from queues import services as qs
from queues.models import Queue, QueueTable

from .conftest import down, up

pytestmark = pytest.mark.django_db


def mapping(lq: LogicalQueue) -> list[tuple[str, str | None, str | None, str | None]]:
    out = []
    for p in lq.partitions.select_related(
        "queue__queue_table__primary_instance",
        "queue__queue_table__secondary_instance",
        "queue__queue_table__owner_instance",
    ).order_by("position"):
        qt = p.queue.queue_table
        out.append(
            (
                p.queue.name,
                qt.primary_instance.name if qt.primary_instance else None,
                qt.secondary_instance.name if qt.secondary_instance else None,
                qt.owner_instance.name if qt.owner_instance else None,
            )
        )
    return out


def test_the_papers_example_is_a_ring_of_three(admin_user, three_instances):
    lq = ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=3)

    assert mapping(lq) == [
        ("ORDERS_P1", "n1", "n2", "n1"),
        ("ORDERS_P2", "n2", "n3", "n2"),
        ("ORDERS_P3", "n3", "n1", "n3"),
    ]
    assert sorted(
        QueueTable.objects.filter(name__startswith="ORDERS_").values_list("name", flat=True)
    ) == [
        "ORDERS_P1_QT",
        "ORDERS_P2_QT",
        "ORDERS_P3_QT",
    ]


def test_the_default_is_three_partitions_per_known_instance(admin_user, three_instances):
    lq = ps.logical_queue_create(user=admin_user, name="SMS")

    rows = mapping(lq)
    assert len(rows) == 9
    assert [r[1] for r in rows] == ["n1", "n2", "n3"] * 3
    assert [r[2] for r in rows] == ["n2", "n3", "n1"] * 3


def test_with_no_instance_known_there_are_three_partitions_and_no_affinity(admin_user):
    lq = ps.logical_queue_create(user=admin_user, name="EARLY")

    assert mapping(lq) == [(f"EARLY_P{i}", None, None, None) for i in (1, 2, 3)]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"partitions": 0}, "partitions"),
        ({"partitions": -2}, "partitions"),
        ({"partitions": True}, "partitions"),
        ({"partitions": 257}, "partitions"),
        ({"name": "1BAD"}, "name"),
        ({"name": ""}, "name"),
        ({"name": "X" * 101}, "name"),
        ({"instances": []}, "instances"),
        ({"instances": "n1"}, "instances"),
        ({"instances": ["n1", "N1"]}, "instances[1]"),
        ({"instances": ["n1", "bad name"]}, "instances[1]"),
        ({"instances": ["n1", 999]}, "instances[1]"),
        ({"sort_order": "random"}, "sort_order"),
    ],
)
def test_bad_input_names_the_field_and_creates_nothing(admin_user, three_instances, kwargs, field):
    args = {"name": "ORDERS", "partitions": 3, **kwargs}
    with pytest.raises(DomainError) as err:
        ps.logical_queue_create(user=admin_user, **args)

    assert err.value.field == field and err.value.status_code == 400
    assert not LogicalQueue.objects.exists()
    assert not QueueTable.objects.filter(name__icontains="_P").exists()


def test_a_name_that_collides_with_a_queue_or_a_logical_queue_is_refused(
    admin_user, three_instances
):
    qt = qs.queue_table_create(user=admin_user, name="OTHER_QT")
    qs.queue_create(user=admin_user, name="ORDERS_P2", queue_table=qt)
    with pytest.raises(DomainError) as err:
        ps.logical_queue_create(user=admin_user, name="orders", partitions=3)
    assert err.value.field == "name" and "ORDERS_P2" in err.value.message
    assert not QueueTable.objects.filter(name__istartswith="orders_P").exists()

    ps.logical_queue_create(user=admin_user, name="SMS", partitions=2)
    with pytest.raises(DomainError) as err:
        ps.logical_queue_create(user=admin_user, name="sms", partitions=2)
    assert err.value.field == "name" and "already exists" in err.value.message


def test_an_unknown_instance_is_allowed_and_registered_down_with_a_warning(admin_user, db):
    from parallel.selectors import logical_queue_warnings

    up("n1")
    lq = ps.logical_queue_create(user=admin_user, name="ORDERS", instances=["n1", "n9"])

    assert len(mapping(lq)) == 6  # 3 x 2 instances
    assert mapping(lq)[1] == ("ORDERS_P2", "n9", "n1", "n1")  # n9 is down: its secondary owns
    warnings = logical_queue_warnings(lq)
    # Once as a primary, once as a secondary; n1 (up) is never named.
    assert len(warnings) == 2 and all("n9 has never reported" in w for w in warnings)


def test_a_physical_queue_of_a_logical_queue_cannot_be_dropped_on_its_own(
    admin_user, three_instances
):
    lq = ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=3)
    part = lq.partitions.get(position=2)

    with pytest.raises(DomainError) as err:
        qs.queue_delete(user=admin_user, queue=part.queue)
    assert "partition of logical queue ORDERS" in err.value.message
    with pytest.raises(DomainError) as err:
        qs.queue_table_delete(user=admin_user, queue_table=part.queue.queue_table)
    assert "partition of logical queue ORDERS" in err.value.message
    assert Queue.objects.filter(name="ORDERS_P2").exists()


def test_dropping_the_logical_queue_drops_its_queues_unless_one_holds_messages(
    admin_user, three_instances
):
    lq = ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=3)
    p3 = lq.partitions.get(position=3).queue
    qs.message_enqueue(user=admin_user, queue=p3, messages=[engine.NewMessage(payload={"n": 1})])

    with pytest.raises(DomainError) as err:
        ps.logical_queue_delete(user=admin_user, logical_queue=lq)
    assert "ORDERS_P3_QT still holds 1 message" in err.value.message
    assert LogicalQueuePartition.objects.filter(logical_queue=lq).count() == 3  # all rolled back

    qs.queue_purge(user=admin_user, queue=p3, condition=engine.PurgeCondition())
    ps.logical_queue_delete(user=admin_user, logical_queue=lq)
    assert not LogicalQueue.objects.exists()
    assert not QueueTable.objects.filter(name__startswith="ORDERS_").exists()


def test_rebuild_spreads_the_ring_over_the_instances_up_now(admin_user, db):
    up("n1"), up("n2")
    lq = ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=3)
    assert [r[1:3] for r in mapping(lq)] == [("n1", "n2"), ("n2", "n1"), ("n1", "n2")]

    up("n3")  # an instance added for good
    done = ps.logical_queue_rebuild(user=admin_user, logical_queue=lq)
    assert done.instances == ["n1", "n2", "n3"]
    assert done.changed == ["ORDERS_P2", "ORDERS_P3"]
    assert mapping(lq) == [
        ("ORDERS_P1", "n1", "n2", "n1"),
        ("ORDERS_P2", "n2", "n3", "n2"),
        ("ORDERS_P3", "n3", "n1", "n3"),
    ]

    down("n2")  # removed for good: two instances left, a swap included
    done = ps.logical_queue_rebuild(user=admin_user, logical_queue=lq)
    assert done.instances == ["n1", "n3"]
    assert [r[1:] for r in mapping(lq)] == [
        ("n1", "n3", "n1"),
        ("n3", "n1", "n3"),
        ("n1", "n3", "n1"),
    ]
    # Positions (and so the key -> partition mapping) never change.
    assert [p.queue.name for p in lq.partitions.order_by("position")] == [
        "ORDERS_P1",
        "ORDERS_P2",
        "ORDERS_P3",
    ]


def test_the_purpose_is_the_administrators_annotation(admin_user, operator_user, three_instances):
    from core.exceptions import Forbidden

    lq = ps.logical_queue_create(user=admin_user, name="ORDERS", partitions=3)
    part = lq.partitions.get(position=1)
    ps.logical_partition_update(user=admin_user, partition=part, purpose="EU orders")
    part.refresh_from_db()
    assert part.purpose == "EU orders"
    with pytest.raises(Forbidden):
        ps.logical_partition_update(user=operator_user, partition=part, purpose="x")
