"""An import first shows its plan (create, change, delete with the fields that change); a dry
run writes nothing; the same import without dry_run applies exactly that plan."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.models import ChangeLogEntry
from definitions.selectors import definitions_export
from jobs.models import Propagation
from queues.models import Queue
from rules.models import Rule

pytestmark = pytest.mark.django_db

NEW_RULE = {"name": "BIG_ORDERS", "condition": ":msg.total > 1000", "comment": "Added."}


def _changed(doc: dict[str, Any]) -> dict[str, Any]:
    """A longer retention on EVENTS, a new rule, and no EVENTS_TO_AUDIT."""
    doc = copy.deepcopy(doc)
    events = next(q for q in doc["queues"] if q["name"] == "EVENTS")
    events["retention_time"] = 7200
    doc["rules"].append(NEW_RULE)
    doc["propagations"] = [p for p in doc["propagations"] if p["name"] != "EVENTS_TO_AUDIT"]
    return doc


def test_a_dry_run_shows_the_exact_changes_and_writes_nothing(demo_document, admin_api):
    doc = _changed(demo_document)
    logged = ChangeLogEntry.objects.count()
    rules_at = len(doc["rules"]) - 1

    r = admin_api.post("/api/definitions/?dry_run=true&prune=true", doc, format="json")

    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["summary"] == {"create": 1, "change": 1, "delete": 1}
    assert (body["dry_run"], body["prune"], body["applied"]) == (True, True, False)
    assert body["changes"] == [
        {
            "action": "create",
            "kind": "rules",
            "name": "BIG_ORDERS",
            "path": f"rules[{rules_at}]",
            "fields": {
                "condition": {"from": None, "to": ":msg.total > 1000"},
                "comment": {"from": None, "to": "Added."},
            },
        },
        {
            "action": "change",
            "kind": "queues",
            "name": "EVENTS",
            "path": f"queues[{[q['name'] for q in doc['queues']].index('EVENTS')}]",
            "fields": {"retention_time": {"from": 3600.0, "to": 7200}},
        },
        {
            "action": "delete",
            "kind": "propagations",
            "name": "EVENTS_TO_AUDIT",
            "path": "",
            "fields": {},
        },
    ]
    assert definitions_export() == demo_document
    assert ChangeLogEntry.objects.count() == logged


def test_the_import_applies_the_plan_through_the_services(demo_document, admin_api):
    doc = _changed(demo_document)

    r = admin_api.post("/api/definitions/?prune=1", doc, format="json")

    assert r.status_code == 200, r.json()
    assert r.json()["applied"] is True
    assert Queue.objects.get(name="EVENTS").retention_time == 7200
    assert Rule.objects.get(name="BIG_ORDERS").condition == ":msg.total > 1000"
    assert not Propagation.objects.filter(name="EVENTS_TO_AUDIT").exists()
    verbs = set(
        ChangeLogEntry.objects.filter(user__username="alice").values_list("verb", flat=True)
    )
    assert verbs == {"queue_update", "rule_create", "propagation_delete", "definitions_import"}
    # Without prune, a document leaves alone what it does not define (RabbitMQ's rule).
    doc["propagations"] = []
    r = admin_api.post("/api/definitions/", doc, format="json")
    assert r.json()["summary"] == {"create": 0, "change": 0, "delete": 0}
    assert Propagation.objects.count() == 2
