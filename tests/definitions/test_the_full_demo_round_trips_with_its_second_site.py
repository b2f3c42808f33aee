"""The demo as the README's run command loads it, second site included: its database link and
the remote propagation EVENTS_TO_SITE2 (to EVENTS_IN@DEMO_SITE2) round trip too.

Opt-in (AQ_TEST_DEFINITIONS_SECOND_SITE=1): making and migrating the second database takes about
20 s, more than the suite's budget allows for one property the lighter round trip
(test_the_demo_topology_round_trips.py, a database link to the test database itself) already
covers but for the remote propagation."""

from __future__ import annotations

import os
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction

from definitions.selectors import definitions_export
from definitions.services import definitions_import
from jobs.models import Propagation

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        os.environ.get("AQ_TEST_DEFINITIONS_SECOND_SITE") != "1",
        reason="opt-in: AQ_TEST_DEFINITIONS_SECOND_SITE=1 (makes a second database, ~20 s)",
    ),
]


def test_the_full_demo_round_trips_as_the_same_document(second_db):
    empty = transaction.savepoint()
    call_command("demo_topology", stdout=StringIO())
    first = definitions_export()
    transaction.savepoint_rollback(empty)
    assert not Propagation.objects.exists()

    definitions_import(user=None, document=first)

    assert definitions_export() == first
    remote = Propagation.objects.get(name="EVENTS_TO_SITE2")
    assert remote.destination == "EVENTS_IN@DEMO_SITE2"
