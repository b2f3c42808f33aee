"""Every message carries its origin site, its route and its Streams tag (docs/SITES.md, "Origin,
route and tag"): a tag is given on enqueue (API, page) as hex text and refused naming ``tag``
when it is not; a message enqueued here shows this site as its origin and an empty route; the
origin and route are the engine's to set, never an enqueuer's; subscriber rules and dequeue
conditions read the tag with ``:dml.get_tag()`` / ``:dml.is_null_tag()``."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from queues import engine
from queues import services as qs
from queues.models import Message

pytestmark = pytest.mark.django_db

LCR = {
    "source_database_name": "DBS1.EXAMPLE.COM",
    "command_type": "INSERT",
    "object_owner": "HR",
    "object_name": "REGIONS",
    "new_values": {"REGION_ID": 1},
}


@pytest.fixture
def queue(sc_table, make_queue):
    return make_queue("Q", sc_table)


def _stored() -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute("SELECT encode(tag, 'hex'), origin_site, route FROM aq_message ORDER BY id")
        return cur.fetchall()


def test_a_tag_given_on_enqueue_is_stored_and_shown(admin_api, queue):
    one = admin_api.post(f"/api/queues/{queue.pk}/enqueue/", {"payload": {"n": 1}, "tag": "1f02"})
    two = admin_api.post(f"/api/queues/{queue.pk}/enqueue/", {"payload": {"n": 2}})
    assert (one.status_code, two.status_code) == (201, 201), (one.content, two.content)

    # Stored as RAW; a message enqueued here has no origin or route of its own (NULL: here).
    assert _stored() == [("1f02", None, None), (None, None, None)]
    listed = admin_api.get(f"/api/queues/{queue.pk}/messages/").json()["results"]
    shown = [(m["tag"], m["origin_site"], m["route"]) for m in listed]
    here = settings.AQ_GLOBAL_NAME
    assert shown == [("1F02", here, []), (None, here, [])]
    got = admin_api.post(f"/api/queues/{queue.pk}/dequeue/", {"batch": 2, "mode": "BROWSE"})
    assert [(m["tag"], m["origin_site"], m["route"]) for m in got.json()["messages"]] == shown


@pytest.mark.parametrize("tag", ["xyz", "123", "1F 02", "00" * 2001, 7])
def test_a_bad_tag_is_a_400_naming_tag_and_writes_nothing(admin_api, queue, tag):
    response = admin_api.post(f"/api/queues/{queue.pk}/enqueue/", {"payload": {}, "tag": tag})

    assert response.status_code == 400, response.content
    assert "tag" in response.json(), response.json()
    assert Message.objects.count() == 0


def test_a_bad_tag_in_a_batch_names_its_message(admin_api, queue):
    response = admin_api.post(
        f"/api/queues/{queue.pk}/enqueue/",
        {"messages": [{"payload": 1, "tag": "02"}, {"payload": 2, "tag": "0"}]},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "messages[1].tag" in response.json(), response.json()
    assert Message.objects.count() == 0


def test_an_enqueue_cannot_forge_an_origin_or_a_route(admin_user, queue):
    from core.exceptions import DomainError

    for fields, name in (({"origin_site": "ELSEWHERE"}, "origin_site"), ({"route": []}, "route")):
        with pytest.raises(DomainError) as err:
            qs.message_enqueue(
                user=admin_user, queue=queue, messages=[engine.NewMessage(payload=1, **fields)]
            )
        assert err.value.field == name
    assert Message.objects.count() == 0


def test_the_enqueue_page_takes_a_tag_and_the_queue_page_shows_it(admin_client, queue):
    url = f"/queues/{queue.pk}/enqueue/"
    bad = admin_client.post(url, {"payload": '{"n": 1}', "kind": "USER", "priority": 1, "delay": 0,
                                  "tag": "zz", "delivery_mode": "PERSISTENT"})  # fmt: skip
    assert bad.status_code == 400 and 'data-field="tag"' in bad.content.decode()
    ok = admin_client.post(url, {"payload": '{"n": 1}', "kind": "USER", "priority": 1, "delay": 0,
                                 "tag": "0a0B", "delivery_mode": "PERSISTENT"})  # fmt: skip
    assert ok.status_code in (200, 302), ok.content.decode()[:2000]
    assert _stored() == [("0a0b", None, None)]

    page = admin_client.get(f"/queues/{queue.pk}/").content.decode()
    assert "0A0B" in page and settings.AQ_GLOBAL_NAME in page


def test_subscriber_rules_and_dequeue_conditions_read_the_message_tag(
    admin_user, mc_table, make_queue
):
    q = make_queue("MQ", mc_table)
    qs.subscriber_add(user=admin_user, queue=q, name="UNTAGGED", rule=":dml.is_null_tag() = 'Y'")
    qs.subscriber_add(user=admin_user, queue=q, name="TAG02", rule=":dml.get_tag() = '02'")
    qs.message_enqueue(
        user=admin_user,
        queue=q,
        messages=[
            engine.NewMessage(payload=LCR, kind="ROW_LCR"),
            engine.NewMessage(payload=LCR, kind="ROW_LCR", tag="02"),
            # The payload's own tag counts when the message has none.
            engine.NewMessage(payload={**LCR, "tag": "02"}, kind="ROW_LCR"),
        ],
    )
    conn = qs.raw_connection()
    info = engine.queue_info(conn, q.pk)

    def tags(consumer: str, **kw) -> list[str | None]:
        got = engine.dequeue(conn, info, consumer=consumer, batch=10, mode=engine.BROWSE, **kw)
        return [m.tag or (m.payload.get("tag") and "p" + m.payload["tag"]) for m in got]

    assert tags("UNTAGGED") == [None]
    assert tags("TAG02") == ["02", "p02"]
    assert tags("TAG02", condition=":dml.get_tag() = HEXTORAW('02') AND "
                                   ":dml.is_null_tag() = 'N'") == ["02", "p02"]  # fmt: skip
    # Without a tag property, the payload's (or none) decides; nobody else is given a copy.
    assert Message.objects.filter(queue=q).count() == 3
