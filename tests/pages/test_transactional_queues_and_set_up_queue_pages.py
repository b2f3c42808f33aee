"""The set-up-queue page and the queue-table page's message grouping, through the same services
as the API; a refusal is a 400 naming the field and creates nothing."""

from __future__ import annotations

from django.contrib.auth.models import User

from queues.models import Queue, QueueTable


def test_the_set_up_queue_page_creates_the_streams_queue_and_lands_on_it(admin_client):
    User.objects.create_user(username="hr", password="pw-hr")
    page = admin_client.get("/queues/set-up/")
    done = admin_client.post(
        "/queues/set-up/",
        {"queue_table": "STRM_QT", "queue_name": "STRM_Q", "queue_user": "hr", "comment": ""},
    )
    queue = Queue.objects.get(name="STRM_Q")
    assert page.status_code == 200 and b"STREAMS_QUEUE_TABLE" in page.content
    assert done.status_code == 302 and done["Location"] == queue.get_absolute_url()
    shown = admin_client.get(queue.get_absolute_url())
    assert b"transactional grouping" in shown.content


def test_the_set_up_queue_page_names_queue_user_when_the_user_does_not_exist(admin_client):
    got = admin_client.post(
        "/queues/set-up/", {"queue_table": "QT", "queue_name": "Q", "queue_user": "nobody"}
    )
    assert got.status_code == 400
    assert b'data-field="queue_user"' in got.content
    assert not QueueTable.objects.filter(name="QT").exists()


def test_the_queue_table_page_creates_a_transactional_table_and_shows_it(admin_client):
    made = admin_client.post(
        "/queues/tables/add/",
        {
            "name": "QT_TX",
            "sort_order": "enq_time",
            "message_grouping": "TRANSACTIONAL",
            "payload_type": "ANY",
        },
    )
    qt = QueueTable.objects.get(name="QT_TX")
    shown = admin_client.get(f"/queues/tables/{qt.pk}/")
    assert made.status_code == 302 and qt.message_grouping == "TRANSACTIONAL"
    assert b'id="message-grouping">Transactional' in shown.content


def test_the_queue_list_offers_set_up_queue_to_a_configuring_role(admin_client, operator_client):
    assert b"/queues/set-up/" in admin_client.get("/queues/").content
    assert b"/queues/set-up/" not in operator_client.get("/queues/").content
    assert operator_client.get("/queues/set-up/").status_code == 403
