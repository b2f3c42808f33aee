"""Every bad propagation or schedule input is refused with the field named, and nothing is
half-written: no propagation, no subscriber, no schedule."""

from __future__ import annotations

import pytest

from core.exceptions import Conflict, DomainError
from jobs import services
from jobs.models import Propagation, PropagationSchedule
from queues import services as qs
from queues.models import Subscriber

pytestmark = pytest.mark.django_db


def _refused(field: str, **kwargs) -> DomainError:
    before = (Propagation.objects.count(), Subscriber.objects.count())
    with pytest.raises(DomainError) as err:
        services.propagation_create(**kwargs)
    assert err.value.field == field, err.value.message
    assert (Propagation.objects.count(), Subscriber.objects.count()) == before
    return err.value


def test_a_queue_cannot_propagate_to_itself(admin_user, mc_table, make_queue):
    src = make_queue("SRC", mc_table)
    e = _refused(
        "destination_queue", user=admin_user, name="P", source_queue=src, destination_queue=src
    )
    assert "itself" in e.message


def test_a_destination_whose_payload_type_cannot_take_the_source_is_refused(
    admin_user, mc_table, make_queue
):
    typed = qs.queue_table_create(
        user=admin_user,
        name="QT_ORDERS_T",
        sort_order="enq_time",
        payload_type="ORDER_T",
        payload_schema={"type": "object", "required": ["id"]},
    )
    e = _refused(
        "destination_queue",
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("ORDERS_T", typed),
    )
    assert "ORDER_T" in e.message


def test_a_second_propagation_for_the_same_pair_is_refused(
    admin_user, mc_table, sc_table, make_queue
):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    services.propagation_create(user=admin_user, name="P1", source_queue=src, destination_queue=dst)
    e = _refused(
        "destination_queue", user=admin_user, name="P2", source_queue=src, destination_queue=dst
    )
    assert isinstance(e, Conflict) and "P1" in e.message


def test_a_single_consumer_source_is_refused(admin_user, sc_table, make_queue):
    _refused(
        "source_queue",
        user=admin_user,
        name="P",
        source_queue=make_queue("A", sc_table),
        destination_queue=make_queue("B", sc_table),
    )


def test_an_exception_queue_is_not_a_destination(admin_user, mc_table, sc_table, make_queue):
    src = make_queue("SRC", mc_table)
    exq = make_queue("DST", sc_table).exception_queue
    _refused(
        "destination_queue", user=admin_user, name="P", source_queue=src, destination_queue=exq
    )


def test_a_duplicate_name_is_refused(admin_user, mc_table, sc_table, make_queue):
    src = make_queue("SRC", mc_table)
    services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=make_queue("A", sc_table)
    )
    _refused(
        "name",
        user=admin_user,
        name="p",
        source_queue=src,
        destination_queue=make_queue("B", sc_table),
    )


def test_the_same_rule_set_cannot_be_positive_and_negative(
    admin_user, mc_table, sc_table, make_queue, rule_set
):
    rs = rule_set("RS", ":msg.n = 1")
    _refused(
        "negative_rule_set",
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
        positive_rule_set=rs,
        negative_rule_set=rs,
    )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"next_time": "every tuesday", "duration": 60}, "next_time"),
        ({"next_time": "61 * * * *", "duration": 60}, "next_time"),
        ({"next_time": "* * 31 2 *", "duration": 60}, "next_time"),
        ({"next_time": "-10m", "duration": 60}, "next_time"),
        ({"next_time": "10m"}, "next_time"),  # a next window needs the current one to end
        ({"latency": -1}, "latency"),
        ({"duration": 0}, "duration"),
        ({"max_failures": 0}, "max_failures"),
    ],
)
def test_bad_schedule_parameters_are_refused_with_the_field(
    admin_user, mc_table, sc_table, make_queue, params, field
):
    _refused(
        field,
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
        **params,
    )
    assert not PropagationSchedule.objects.exists()


def test_altering_a_schedule_badly_changes_nothing(admin_user, mc_table, sc_table, make_queue):
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
        duration=60,
        next_time="5m",
    )
    with pytest.raises(DomainError) as err:
        services.schedule_update(user=admin_user, propagation=p, next_time="*/0 * * * *")
    assert err.value.field == "next_time"
    assert PropagationSchedule.objects.get(propagation=p).next_time == "5m"


def test_a_queue_or_rule_set_in_use_cannot_be_dropped(
    admin_user, mc_table, sc_table, make_queue, rule_set
):
    from rules import services as rs

    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    pos = rule_set("RS", ":msg.n = 1")
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst, positive_rule_set=pos
    )
    with pytest.raises(Conflict, match="propagation P"):
        qs.queue_delete(user=admin_user, queue=dst)
    with pytest.raises(Conflict, match="propagation P"):
        rs.rule_set_delete(user=admin_user, rule_set=pos)
    assert pos.members.count() == 1  # the refused drop left the set whole
    with pytest.raises(Conflict, match="propagation P"):
        qs.subscriber_remove(user=admin_user, subscriber=p.subscriber)
