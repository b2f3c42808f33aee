"""The demo's second site: a database next to the console's on the same server, migrated with its
own global name and holding EVENTS_IN; the demo links to it and propagates new orders from EVENTS
there, so the first run shows messages crossing databases. A second load changes nothing."""

from __future__ import annotations

from io import StringIO

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command

from jobs.models import Propagation
from queues.models import MessageConsumer
from sites.models import DatabaseLink

pytestmark = pytest.mark.django_db


def test_the_demo_links_a_second_site_and_propagates_new_orders_there(second_db):
    out = StringIO()
    call_command("demo_topology", stdout=out)

    link = DatabaseLink.objects.get(name="DEMO_SITE2")
    assert link.database == second_db.database
    first = settings.AQ_GLOBAL_NAME.partition(".")[0]
    assert link.remote_global_name.startswith(f"{first}_SITE2")
    prop = Propagation.objects.get(name="EVENTS_TO_SITE2")
    assert prop.destination == "EVENTS_IN@DEMO_SITE2"
    # The events were enqueued after the propagation: the source keeps each one for it (all but
    # the one addressed to SHIPPING alone); its rule sends on the three new orders.
    assert MessageConsumer.objects.filter(subscriber=prop.subscriber).count() == 7
    with psycopg.connect(second_db.url.replace("postgres://", "postgresql://")) as conn:
        assert (
            conn.execute("SELECT global_name FROM aq_site").fetchone()[0] == link.remote_global_name
        )
        assert conn.execute("SELECT name FROM queues_queue WHERE name = 'EVENTS_IN'").fetchone()
    assert "Second site" in out.getvalue()

    again = StringIO()
    call_command("demo_topology", stdout=again)
    assert "already loaded" in again.getvalue()
    assert DatabaseLink.objects.count() == 1


def test_without_a_second_site_the_demo_still_loads(second_db):
    out = StringIO()
    call_command("demo_topology", "--without-second-site", stdout=out)
    assert "Demo topology loaded" in out.getvalue()
    assert not DatabaseLink.objects.exists()
    assert not Propagation.objects.filter(name="EVENTS_TO_SITE2").exists()


def test_a_demo_loaded_without_its_second_site_gets_it_at_the_next_load(second_db):
    call_command("demo_topology", "--without-second-site", stdout=StringIO())

    out = StringIO()
    call_command("demo_topology", stdout=out)

    assert "added its second site" in out.getvalue()
    prop = Propagation.objects.get(name="EVENTS_TO_SITE2")
    # Only the two new orders enqueued with it wait for it at the source.
    assert MessageConsumer.objects.filter(subscriber=prop.subscriber).count() == 2
