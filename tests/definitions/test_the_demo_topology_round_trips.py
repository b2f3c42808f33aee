"""The required property: the demo topology exported, imported into an empty database and
exported again gives the very same document (secrets included: they are sealed
deterministically)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from core.models import ChangeLogEntry
from definitions.kinds import KINDS
from definitions.selectors import definitions_export
from definitions.services import definitions_import
from gateway.models import Job
from jobs.models import Propagation
from queues.models import Queue
from tests.definitions.conftest import add_what_the_demo_lacks, load_demo

pytestmark = pytest.mark.django_db


def test_the_demo_round_trips_into_an_empty_database_as_the_same_document():
    # Users are not part of the definitions: the one the grants name exists at both ends.
    dora = User.objects.create_user(username="dora")
    empty = transaction.savepoint()
    load_demo()
    add_what_the_demo_lacks(dora)
    first = definitions_export()
    assert all(first[kind.name] for kind in KINDS), "a section of the document is empty"
    transaction.savepoint_rollback(empty)  # the database as it was: no topology at all
    assert not Queue.objects.exists() and not Propagation.objects.exists()

    plan = definitions_import(user=None, document=json.loads(json.dumps(first)))

    assert plan.applied
    assert json.dumps(definitions_export(), sort_keys=True) == json.dumps(first, sort_keys=True)
    assert definitions_export() == first
    # Everything came through the services: each object has its change-log row.
    logged = set(ChangeLogEntry.objects.values_list("verb", flat=True))
    assert {"queue_table_create", "queue_create", "propagation_create", "create_job"} <= logged
    assert Job.objects.count() == 2


def test_a_second_import_of_the_same_document_changes_nothing(demo_document):
    plan = definitions_import(user=None, document=demo_document, prune=True)
    assert plan.changes == []
    # The gateway's names are upper case whatever case a document writes them in (DBMS_MGWADM).
    for link in demo_document["links"]:
        link["name"], link["agent"] = link["name"].lower(), link["agent"].lower()
    plan = definitions_import(user=None, document=demo_document, prune=True)
    assert plan.changes == []
