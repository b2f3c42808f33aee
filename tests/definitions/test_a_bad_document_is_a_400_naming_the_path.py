"""A document the services refuse is a 400 naming the document's path, and nothing of it is
written, not even what came before the bad object."""

from __future__ import annotations

import copy

import pytest

from core.models import ChangeLogEntry
from definitions.selectors import definitions_export
from queues.models import QueueTable

pytestmark = pytest.mark.django_db


def test_a_queue_on_a_missing_queue_table_is_refused_and_nothing_is_written(
    demo_document, admin_api
):
    doc = copy.deepcopy(demo_document)
    # Applied first (queue tables come before queues): it must be rolled back with the rest.
    doc["queue_tables"].append({"name": "NEW_QT", "sort_order": "enq_time"})
    doc["queues"][3]["queue_table"] = "NO_SUCH_QT"
    logged = ChangeLogEntry.objects.count()

    r = admin_api.post("/api/definitions/", doc, format="json")

    assert r.status_code == 400
    assert r.json() == {"queues[3].queue_table": ["No queue table named NO_SUCH_QT."]}
    assert not QueueTable.objects.filter(name="NEW_QT").exists()
    assert ChangeLogEntry.objects.count() == logged
    assert definitions_export() == demo_document


@pytest.fixture
def small_document(queue) -> dict:
    """A queue table with its queue, a rule and a link: enough for every path below."""
    from gateway import services as gateway_services
    from rules import services as rule_services

    rule_services.rule_create(user=None, name="R1", condition=":msg.x = 1")
    gateway_services.link_create(
        user=None,
        name="MQ",
        link_type="MQTT",
        properties={"host": "127.0.0.1", "port": 1883},
        password="s3cret",
    )
    return definitions_export()


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda d: d.update(format="rabbitmq"), "format"),
        (lambda d: d.update(version=2), "version"),
        (lambda d: d["queues"][0].update(colour="red"), "queues[0].colour"),
        (lambda d: d["queues"].append(dict(d["queues"][0])), "queues[2]"),
        (lambda d: d["queues"][1].update(max_retries=-1), "queues[1].max_retries"),
        (lambda d: d["links"][0].update(password={"encrypted": "AAAA"}), "links[0].password"),
        (lambda d: d["rules"][0].update(condition=":msg.x = "), "rules[0].condition"),
    ],
)
def test_each_refusal_names_its_path(small_document, admin_api, edit, path):
    doc = copy.deepcopy(small_document)
    edit(doc)

    r = admin_api.post("/api/definitions/?dry_run=true", doc, format="json")

    assert r.status_code == 400, r.json()
    assert list(r.json()) == [path]
