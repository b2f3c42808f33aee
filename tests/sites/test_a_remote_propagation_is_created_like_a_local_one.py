"""A propagation to QUEUE@LINK is created through the same API as a local one; the link's site
is asked whether the queue exists and takes the source's payloads (refusals name
destination_queue and write nothing); the link it uses cannot be dropped. The remote receive
skips a batch it has already taken (receipts), which is what makes a re-send harmless."""

from __future__ import annotations

import pytest
from django.db import connection

from core.models import ChangeLogEntry
from jobs.models import Propagation
from queues import engine
from queues.models import Subscriber
from tests.sites.remote_queues import remote_queues, site_b_conn

pytestmark = pytest.mark.django_db


@pytest.fixture
def topo(site, make_link, mc_table, make_queue):
    remote_queues(site)
    make_link("SITE_B")
    return make_queue("SRC", mc_table)


def _rows() -> tuple:
    return (
        list(Propagation.objects.values()),
        sorted(Subscriber.objects.values_list("queue_id", "name")),
        ChangeLogEntry.objects.filter(object_type="jobs.propagation").count(),
    )


def test_a_remote_queue_is_named_queue_at_link(admin_api, topo):
    response = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B", "source_queue": "SRC", "destination_queue": "remote_in@site_b"},
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["destination"] == "REMOTE_IN@SITE_B"
    assert (body["destination_queue"], body["destination_dblink"]) == ("REMOTE_IN", "SITE_B")
    assert Subscriber.objects.get(queue=topo, name="TO_B").address == "REMOTE_IN@SITE_B"
    with connection.cursor() as cur:
        cur.execute(
            "SELECT destination_queue_owner, destination_queue_name, destination_dblink "
            "FROM dba_propagation WHERE propagation_name = 'TO_B'"
        )
        assert cur.fetchall() == [("SITE_USER", "REMOTE_IN", "SITE_B")]
        cur.execute("SELECT destination FROM dba_queue_schedules WHERE qname = 'SRC'")
        assert cur.fetchall() == [('"SITE_USER"."REMOTE_IN"@SITE_B',)]
    again = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B2", "source_queue": "SRC", "destination_queue": "REMOTE_IN@SITE_B"},
    )
    assert again.status_code == 409 and "destination_queue" in again.json()


@pytest.mark.parametrize(
    "destination",
    [
        "NO_SUCH_QUEUE@SITE_B",  # the remote says it does not exist
        "REMOTE_TYPED@SITE_B",  # ORDER payloads there; the source holds any payload
        "REMOTE_IN@NO_SUCH_LINK",
        "@SITE_B",
    ],
)
def test_a_bad_remote_destination_names_the_field(admin_api, topo, destination):
    before = _rows()

    response = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B", "source_queue": "SRC", "destination_queue": destination},
    )

    assert response.status_code == 400, response.content
    assert "destination_queue" in response.json(), response.json()
    assert _rows() == before


def test_the_missing_queue_error_says_where_it_looked(admin_api, topo):
    response = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B", "source_queue": "SRC", "destination_queue": "NOPE@SITE_B"},
    )
    text = str(response.json())
    assert "NOPE" in text and "SITE_B" in text


def test_a_link_a_propagation_uses_cannot_be_dropped(admin_api, topo):
    from sites.models import DatabaseLink

    created = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B", "source_queue": "SRC", "destination_queue": "REMOTE_IN@SITE_B"},
    )
    assert created.status_code == 201, created.content
    link = DatabaseLink.objects.get(name="SITE_B")

    response = admin_api.delete(f"/api/db-links/{link.pk}/")

    assert response.status_code == 409, response.content
    assert "TO_B" in str(response.json())
    assert DatabaseLink.objects.filter(pk=link.pk).exists()


def test_the_remote_receive_takes_a_batch_once(site):
    remote_queues(site)
    msgs = [engine.NewMessage(payload={"tag": "receive-once", "n": n}) for n in range(3)]
    with site_b_conn(site) as conn:
        dest = engine.queue_info(conn, "REMOTE_IN")
        args = {"source_site": "SRC.TEST", "stream": "RECEIVE_ONCE", "delivery_mode": "PERSISTENT"}
        first = engine.receive(conn, dest, msgs, [1, 2, 3], **args)
        conn.commit()
        again = engine.receive(conn, dest, msgs, [1, 2, 3], **args)  # a re-send
        conn.commit()
        count = conn.execute(
            "SELECT count(*) FROM aq_message WHERE queue_id = %s AND payload->>'tag' = %s",
            (dest.id, "receive-once"),
        ).fetchone()[0]
        forgot = engine.receive(conn, dest, [], [], forget=[1, 2, 3], **args)
        left = engine.receipts(conn, source_site="SRC.TEST", stream="RECEIVE_ONCE")
        conn.rollback()  # leave site_b as it was, receipts and all

    assert (first, again, count, forgot, left) == (3, 0, 3, 0, [])


def test_the_propagation_page_takes_a_remote_queue(admin_client, topo):
    refused = admin_client.post(
        "/propagations/add/",
        {
            "name": "TO_B",
            "source_queue": topo.pk,
            "remote_destination": "NOPE@SITE_B",
            "latency": "3",
        },
    )
    assert refused.status_code == 400
    assert list(refused.context["form"].errors) == ["destination_queue"]
    assert "does not exist at the site of database link SITE_B" in refused.content.decode()
    assert not Propagation.objects.exists()

    response = admin_client.post(
        "/propagations/add/",
        {
            "name": "TO_B",
            "source_queue": topo.pk,
            "remote_destination": "REMOTE_IN@SITE_B",
            "latency": "3",
        },
    )

    assert response.status_code == 302, response.content.decode()[-2000:]
    p = Propagation.objects.get(name="TO_B")
    assert p.destination == "REMOTE_IN@SITE_B"
    page = admin_client.get(p.get_absolute_url()).content.decode()
    assert "REMOTE_IN@SITE_B" in page
    assert "REMOTE_IN@SITE_B" in admin_client.get("/propagations/").content.decode()
