"""With prune, what the document does not define is deleted, dependents first; a delete a service
refuses rolls the whole import back."""

from __future__ import annotations

import pytest

from definitions.selectors import FORMAT, VERSION, definitions_export
from definitions.services import definitions_import
from gateway.models import Link
from jobs.models import Propagation
from queues.models import Queue, QueueTable, Subscriber
from rules.models import Rule, RuleSet

pytestmark = pytest.mark.django_db

EMPTY = {"format": FORMAT, "version": VERSION}


def test_prune_to_an_empty_document_deletes_the_whole_topology(multi_queue, admin_user):
    from gateway import services as gw
    from jobs import services as js
    from queues import services as qs
    from rules import services as rs

    qt = qs.queue_table_create(user=None, name="DEST_QT")
    dest = qs.queue_create(user=None, name="DEST", queue_table=qt)
    rule_set = rs.rule_set_create(user=None, name="RS")
    rs.rule_set_add_rule(
        user=None, rule_set=rule_set, rule=rs.rule_create(user=None, name="R", condition="1 = 1")
    )
    js.propagation_create(
        user=None,
        name="P",
        source_queue=multi_queue,
        destination_queue=dest,
        positive_rule_set=rule_set,
    )
    link = gw.link_create(
        user=None, name="MQ", link_type="MQTT", properties={"host": "127.0.0.1", "port": 1883}
    )
    gw.foreign_queue_register(user=None, name="OUT", link=link, provider_queue="a/b")
    gw.job_create(
        user=None, job_name="J", propagation_type="OUTBOUND", source="DEST", destination="OUT@MQ"
    )

    plan = definitions_import(user=admin_user, document=EMPTY, prune=True)

    assert plan.applied
    assert not QueueTable.objects.exists() and not Queue.objects.exists()
    assert not Subscriber.objects.exists() and not Propagation.objects.exists()
    assert not RuleSet.objects.exists() and not Rule.objects.exists()
    assert not Link.objects.exists()
    deleted = [(c.kind, c.name) for c in plan.changes if c.action == "delete"]
    # Reverse dependency order: what uses an object goes before it.
    assert deleted.index(("jobs", "J")) < deleted.index(("foreign_queues", "OUT@MQ"))
    assert deleted.index(("propagations", "P")) < deleted.index(("rule_sets", "RS"))
    assert deleted.index(("rule_sets", "RS")) < deleted.index(("rules", "R"))
    assert deleted.index(("queues", "DEST")) < deleted.index(("queue_tables", "DEST_QT"))
    assert ("gateway_agents", "DEFAULT_AGENT") not in deleted
    assert definitions_export()["gateway_agents"][0]["name"] == "DEFAULT_AGENT"


def test_a_refused_delete_rolls_the_whole_import_back(queue, enqueue_some, admin_api):
    enqueue_some(queue, {"n": 1})  # a queue holding a message cannot be dropped
    before = definitions_export()

    r = admin_api.post("/api/definitions/?prune=true", EMPTY, format="json")

    assert r.status_code == 409
    (field,) = r.json()
    assert field == "queues" and "ORDERS" in r.json()["queues"][0]
    assert definitions_export() == before
