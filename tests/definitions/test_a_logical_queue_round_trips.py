"""Logical queues (parallel queues) are part of the definitions: the mapping (position, queue,
primary and secondary instance, purpose) round-trips, a dry run shows it, an import changes a
purpose or an instance through the parallel services, and refuses to re-map partitions."""

from __future__ import annotations

import copy
import json

import pytest

from core.exceptions import DomainError
from definitions.selectors import definitions_export
from definitions.services import definitions_import
from instances.services import instance_heartbeat
from parallel.models import LogicalQueue, LogicalQueuePartition
from parallel.services import (
    logical_partition_update,
    logical_queue_create,
    logical_queue_delete,
)
from queues.models import Queue, QueueTable

pytestmark = pytest.mark.django_db


@pytest.fixture
def orders(admin_user):
    for name in ("n1", "n2", "n3"):
        instance_heartbeat(name=name, host=f"host-{name}", worker=f"w@{name}")
    lq = logical_queue_create(user=admin_user, name="ORDERS", partitions=3, comment="Shop.")
    logical_partition_update(
        user=admin_user, partition=lq.partitions.get(position=2), purpose="EU orders"
    )
    return lq


def mapping() -> list[tuple]:
    return [
        (
            p.logical_queue.name,
            p.position,
            p.queue.name,
            p.queue.queue_table.primary_instance.name,
            p.queue.queue_table.secondary_instance.name,
            p.purpose,
        )
        for p in LogicalQueuePartition.objects.select_related(
            "logical_queue",
            "queue__queue_table__primary_instance",
            "queue__queue_table__secondary_instance",
        ).order_by("position")
    ]


def test_the_logical_queue_round_trips_into_an_empty_topology(orders, admin_user):
    first = definitions_export()
    assert first["logical_queues"] == [
        {
            "name": "ORDERS",
            "comment": "Shop.",
            "partitions": [
                {
                    "position": 1,
                    "queue": "ORDERS_P1",
                    "primary_instance": "n1",
                    "secondary_instance": "n2",
                    "purpose": "",
                },
                {
                    "position": 2,
                    "queue": "ORDERS_P2",
                    "primary_instance": "n2",
                    "secondary_instance": "n3",
                    "purpose": "EU orders",
                },
                {
                    "position": 3,
                    "queue": "ORDERS_P3",
                    "primary_instance": "n3",
                    "secondary_instance": "n1",
                    "purpose": "",
                },
            ],
        }
    ]
    before = mapping()
    logical_queue_delete(user=admin_user, logical_queue=orders)
    assert not Queue.objects.filter(name__startswith="ORDERS_").exists()

    dry = definitions_import(user=admin_user, document=json.loads(json.dumps(first)), dry_run=True)
    created = {(c.kind, c.name) for c in dry.changes if c.action == "create"}
    assert {("queue_tables", "ORDERS_P1_QT"), ("queues", "ORDERS_P3")} <= created
    shown = next(c for c in dry.changes if c.kind == "logical_queues")
    assert (shown.action, shown.name, shown.path) == ("create", "ORDERS", "logical_queues[0]")
    assert shown.fields["partitions"]["to"][1]["purpose"] == "EU orders"
    assert not LogicalQueue.objects.exists()  # a dry run leaves nothing

    plan = definitions_import(user=admin_user, document=first)
    assert plan.applied
    assert mapping() == before
    assert definitions_export() == first
    assert definitions_import(user=admin_user, document=first, prune=True).changes == []


def test_an_import_changes_a_purpose_and_an_instance_and_prune_drops_it(orders, admin_user):
    doc = definitions_export()
    changed = copy.deepcopy(doc)
    part = changed["logical_queues"][0]["partitions"][0]
    part["purpose"], part["secondary_instance"] = "APAC", "n3"
    plan = definitions_import(user=admin_user, document=changed)
    assert [(c.action, c.kind, list(c.fields)) for c in plan.changes] == [
        ("change", "logical_queues", ["partitions"])
    ]
    assert mapping()[0] == ("ORDERS", 1, "ORDERS_P1", "n1", "n3", "APAC")

    emptied = {
        k: v for k, v in doc.items() if k not in ("logical_queues", "queues", "queue_tables")
    }
    plan = definitions_import(user=admin_user, document=emptied, prune=True)
    assert ("delete", "logical_queues", "ORDERS") in {
        (c.action, c.kind, c.name) for c in plan.changes
    }
    assert not LogicalQueue.objects.exists() and not QueueTable.objects.exists()


def test_re_mapping_partitions_is_refused_at_the_documents_path(orders, admin_user):
    doc = definitions_export()
    doc["logical_queues"][0]["partitions"][0]["queue"] = "ORDERS_P2"
    with pytest.raises(DomainError) as err:
        definitions_import(user=admin_user, document=doc)
    assert err.value.field.startswith("logical_queues[0].partitions")
    doc = definitions_export()
    doc["logical_queues"].append(
        {"name": "OTHER", "partitions": [{"position": 1, "queue": "NOPE"}]}
    )
    with pytest.raises(DomainError) as err:
        definitions_import(user=admin_user, document=doc)
    assert err.value.field == "logical_queues[1].partitions[0].queue"
