"""A queue table's owner instance follows its primary and secondary instances as their workers'
heartbeats (through instances.services) bring them up and down; every move is logged once."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from instances.services import instance_heartbeat
from queues import services as qs
from queues.models import DbaQueueTable, QueueTable, QueueTableOwnerMove

pytestmark = pytest.mark.django_db


def up(name: str) -> int:
    return instance_heartbeat(name=name, host=f"host-{name}", worker=f"w@{name}")


def down(name: str) -> None:
    """A clean stop of the instance's only worker: DOWN at once."""
    instance_heartbeat(name=name, host=f"host-{name}", worker=f"w@{name}", stopping=True)


def owner(qt: QueueTable) -> int:
    qt.refresh_from_db()
    return qt.owner_instance_id or 0


def moves(qt: QueueTable) -> list[tuple[int, int]]:
    return [
        (m.from_instance_id or 0, m.to_instance_id or 0)
        for m in QueueTableOwnerMove.objects.filter(queue_table=qt).order_by("id")
    ]


@pytest.fixture
def ring(admin_user):
    """Three live instances and a queue table owned by 1 with 2 as its secondary (S003's ring)."""
    ids = [up("n1"), up("n2"), up("n3")]
    qt = qs.queue_table_create(
        user=admin_user, name="QT_RING", primary_instance="n1", secondary_instance="n2"
    )
    return qt, ids


def test_failover_to_the_secondary_and_back_to_the_primary(ring):
    qt, (n1, n2, _n3) = ring
    assert owner(qt) == n1  # set at create, from the instances up then
    down("n1")
    assert [(m.from_instance_id, m.to_instance_id) for m in qs.queue_table_owners_refresh()] == [
        (n1, n2)
    ]
    assert owner(qt) == n2
    up("n1")
    qs.queue_table_owners_refresh()
    assert owner(qt) == n1
    assert moves(qt) == [(0, n1), (n1, n2), (n2, n1)]
    assert list(
        QueueTableOwnerMove.objects.filter(queue_table=qt).values_list("reason", flat=True)
    ) == ["primary instance up", "primary instance down", "primary instance up"]


def test_with_both_down_another_instance_owns_until_one_of_them_returns(ring):
    qt, (n1, n2, n3) = ring
    down("n1")
    down("n2")
    qs.queue_table_owners_refresh()
    assert owner(qt) == n3
    up("n2")
    qs.queue_table_owners_refresh()
    assert owner(qt) == n2
    up("n1")
    qs.queue_table_owners_refresh()
    assert owner(qt) == n1
    down("n1")
    down("n2")
    down("n3")
    qs.queue_table_owners_refresh()
    assert owner(qt) == 0  # nobody up: nobody owns it
    assert moves(qt) == [(0, n1), (n1, n3), (n3, n2), (n2, n1), (n1, 0)]


def test_a_refresh_with_nothing_changed_logs_nothing(ring):
    _qt, _ = ring
    before = QueueTableOwnerMove.objects.count()
    assert qs.queue_table_owners_refresh() == []
    assert qs.queue_table_owners_refresh() == []
    assert QueueTableOwnerMove.objects.count() == before


def test_without_a_primary_any_live_instance_owns_and_keeps_it(admin_user):
    n1 = up("n1")
    qt = qs.queue_table_create(user=admin_user, name="QT_ANY")
    assert owner(qt) == n1
    n0 = up("n0")
    qs.queue_table_owners_refresh()
    assert owner(qt) == n1  # a new instance does not take a live owner's queue table
    down("n1")
    qs.queue_table_owners_refresh()
    assert owner(qt) == n0


def test_altering_the_primary_moves_ownership_at_once(ring, admin_user):
    qt, (n1, _n2, n3) = ring
    qs.queue_table_update(user=admin_user, queue_table=qt, primary_instance="n3")
    assert owner(qt) == n3
    assert moves(qt)[-1] == (n1, n3)
    qs.queue_table_update(
        user=admin_user, queue_table=qt, primary_instance=None, secondary_instance=None
    )
    assert owner(qt) == n3  # no preference: the owner keeps it


def test_each_move_is_on_the_change_log(ring):
    _qt, (n1, n2, _) = ring
    down("n1")
    qs.queue_table_owners_refresh()
    entry = ChangeLogEntry.objects.filter(verb="queue_table_owner_move").order_by("-id").first()
    assert entry is not None and entry.user is None
    assert (entry.object_repr, entry.before, entry.after) == (
        "QT_RING",
        {"owner_instance": n1},
        {"owner_instance": n2, "reason": "primary instance down"},
    )


def test_dba_queue_tables_shows_the_instance_numbers(ring, admin_user):
    _qt, (n1, n2, _) = ring
    qs.queue_table_create(user=admin_user, name="QT_NONE")
    rows = {
        r.queue_table: (r.primary_instance, r.secondary_instance, r.owner_instance)
        for r in DbaQueueTable.objects.all()
    }
    assert rows["QT_RING"] == (n1, n2, n1)
    assert rows["QT_NONE"] == (0, 0, n1)  # no preference; owned by a live instance
    down("n1")
    down("n2")
    down("n3")
    qs.queue_table_owners_refresh()
    rows = {r.queue_table: r.owner_instance for r in DbaQueueTable.objects.all()}
    assert rows == {"QT_RING": 0, "QT_NONE": 0}
