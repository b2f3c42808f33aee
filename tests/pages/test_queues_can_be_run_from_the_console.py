"""The console's forms build a topology and move messages, through the same services as the API."""

from __future__ import annotations

import re

from django.contrib.auth.models import User

from queues import services
from queues.models import AgentUser, Message, Queue, QueuePrivilege, QueueTable, Subscriber

ENQUEUE_FORM = {"kind": "USER", "priority": 1, "delay": 0, "visibility": "ON_COMMIT"}
DEQUEUE_FORM = {"navigation": "FIRST_MESSAGE", "batch": 10, "wait": 0}


def test_an_administrator_creates_a_queue_table_and_a_queue(admin_client):
    qt = admin_client.post(
        "/queues/tables/add/",
        {"name": "QT_WEB", "sort_order": "priority", "payload_type": "ANY", "comment": "web"},
    )
    table = QueueTable.objects.get(name="QT_WEB")
    q = admin_client.post(
        "/queues/add/",
        {
            "name": "WEBQ",
            "queue_table": table.pk,
            "kind": "NORMAL_QUEUE",
            "max_retries": 3,
            "retry_delay": 2,
            "retention_time": 0,
            "enqueue_enabled": "on",
            "dequeue_enabled": "on",
        },
    )

    queue = Queue.objects.get(name="WEBQ")
    assert (qt.status_code, qt["Location"]) == (302, f"/queues/tables/{table.pk}/")
    assert (q.status_code, q["Location"]) == (302, f"/queues/{queue.pk}/")
    assert (queue.max_retries, queue.retry_delay, queue.exception_queue.name) == (
        3,
        2,
        "AQ$_QT_WEB_E",
    )


def test_an_administrator_edits_a_queue_and_a_queue_table(admin_client, queue):
    admin_client.post(
        f"/queues/{queue.pk}/edit/",
        {"max_retries": 1, "retry_delay": 0, "retention_time": 30, "comment": "c"},
    )
    admin_client.post(f"/queues/tables/{queue.queue_table_id}/edit/", {"comment": "t"})

    queue.refresh_from_db()
    assert (queue.max_retries, queue.retention_time, queue.comment) == (1, 30, "c")
    assert queue.queue_table.comment == "t"


def test_the_queue_page_enqueues_browses_and_dequeues(operator_client, queue):
    page = f"/queues/{queue.pk}/"

    enq = operator_client.post(
        f"{page}enqueue/", {**ENQUEUE_FORM, "payload": '{"order": 42, "lines": [1, 2]}'}
    )
    shown = operator_client.get(page).content.decode()
    browse = operator_client.post(f"{page}dequeue/", {**DEQUEUE_FORM, "mode": "BROWSE"})
    remove = operator_client.post(f"{page}dequeue/", {**DEQUEUE_FORM, "mode": "REMOVE"})

    assert (enq.status_code, enq["Location"]) == (302, page)
    assert "&quot;order&quot;: 42" in shown  # formatted payload in the message table
    assert "&quot;order&quot;: 42" in browse.content.decode()
    assert "&quot;order&quot;: 42" in remove.content.decode()
    assert not Message.objects.exists()


def test_an_htmx_enqueue_returns_the_panel_with_the_new_id(operator_client, queue):
    response = operator_client.post(
        f"/queues/{queue.pk}/enqueue/", {**ENQUEUE_FORM, "payload": "7"}, HTTP_HX_REQUEST="true"
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="enqueue-result"' in html
    assert str(Message.objects.get().pk) in html


def test_a_locked_dequeue_shows_the_lock(operator_client, queue, enqueue_some):
    enqueue_some(queue, 1)

    response = operator_client.post(
        f"/queues/{queue.pk}/dequeue/", {**DEQUEUE_FORM, "mode": "LOCKED"}
    )

    msg = Message.objects.get()
    assert msg.lock_token is not None
    assert f"lock {msg.lock_token}" in response.content.decode()


def test_start_and_stop_from_the_queue_page(operator_client, queue):
    operator_client.post(f"/queues/{queue.pk}/stop/", {"what": "enqueue"})
    queue.refresh_from_db()
    stopped = (queue.enqueue_enabled, queue.dequeue_enabled)

    operator_client.post(f"/queues/{queue.pk}/start/", {"what": "both"})
    queue.refresh_from_db()

    assert stopped == (False, True)
    assert (queue.enqueue_enabled, queue.dequeue_enabled) == (True, True)


def test_purge_by_state_from_the_console(operator_client, queue, enqueue_some):
    enqueue_some(queue, 1)
    enqueue_some(queue, 2, delay=3600)

    response = operator_client.post(
        f"/queues/{queue.pk}/purge/", {"confirm": "ORDERS", "states": ["WAITING"]}
    )

    assert response.status_code == 302
    assert list(Message.objects.values_list("state", flat=True)) == ["READY"]


def test_purge_everything_from_the_console(operator_client, queue, enqueue_some):
    enqueue_some(queue, 1, 2, 3)

    response = operator_client.post(
        f"/queues/{queue.pk}/purge/", {"confirm": "ORDERS"}, follow=True
    )

    assert "Purged 3 message(s)" in response.content.decode()
    assert not Message.objects.exists()


def test_replay_from_the_console(operator_client, expired_message):
    source, exq, mid = expired_message

    response = operator_client.post(f"/queues/{exq.pk}/replay/", {"ids": str(mid)}, follow=True)

    assert "Replayed 1 message(s)" in response.content.decode()
    assert Message.objects.get(pk=mid).queue_id == source.pk


def test_subscribers_from_the_console(admin_client, multi_queue):
    admin_client.post(f"/queues/{multi_queue.pk}/subscribers/add/", {"name": "AUDIT"})
    audit = Subscriber.objects.get(name="AUDIT")
    admin_client.post(f"/queues/subscribers/{audit.pk}/remove/")

    assert sorted(Subscriber.objects.values_list("name", flat=True)) == ["BILLING", "SHIPPING"]


def test_agents_and_access_from_the_console(admin_client, operator_user):
    admin_client.post("/queues/agents/add/", {"name": "APP1"})
    from queues.models import Agent

    agent = Agent.objects.get(name="APP1")
    admin_client.post(
        "/queues/agents/access/enable/", {"agent": agent.pk, "user": operator_user.pk}
    )
    enabled = list(AgentUser.objects.values_list("agent__name", "user__username"))
    privs = admin_client.get("/queues/status/?view=dba_aq_agent_privs").content.decode()
    admin_client.post(
        "/queues/agents/access/disable/", {"agent": agent.pk, "user": operator_user.pk}
    )
    admin_client.post(f"/queues/agents/{agent.pk}/delete/")

    assert enabled == [("APP1", "oscar")]
    assert "APP1" in privs and "oscar" in privs
    assert not Agent.objects.exists()


def test_privileges_from_the_console(admin_client, queue, operator_user):
    admin_client.post(
        "/queues/privileges/grant/",
        {"queue": queue.pk, "user": operator_user.pk, "privilege": "DEQUEUE"},
    )
    grant = QueuePrivilege.objects.get()
    listed = admin_client.get("/queues/privileges/").content.decode()
    admin_client.post(f"/queues/privileges/{grant.pk}/revoke/")

    assert (grant.queue, grant.user, grant.privilege) == (queue, operator_user, "DEQUEUE")
    assert "oscar" in listed
    assert not QueuePrivilege.objects.exists()


def test_the_status_pages_use_oracles_column_names(monitor_client, queue, admin_user):
    agent = services.agent_create(user=admin_user, name="APP1")
    services.agent_enable_db_access(
        user=admin_user, agent=agent, db_user=User.objects.get(username="alice")
    )

    tables = monitor_client.get("/queues/status/?view=dba_queue_tables").content.decode().upper()
    queues = monitor_client.get("/queues/status/?view=dba_queues").content.decode().upper()
    privs = monitor_client.get("/queues/status/?view=dba_aq_agent_privs").content.decode().upper()

    for column in ("OWNER", "QUEUE_TABLE", "SORT_ORDER", "RECIPIENTS", "SECURE"):
        assert column in tables, column
    for column in ("NAME", "QID", "QUEUE_TYPE", "MAX_RETRIES", "ENQUEUE_ENABLED"):
        assert column in queues, column
    for column in ("AGENT_NAME", "DB_USERNAME"):
        assert column in privs, column
    assert "QT_ORDERS" in tables and "ORDERS" in queues and "APP1" in privs


def test_the_queue_list_page_shows_depths_and_counters(monitor_client, queue, enqueue_some):
    enqueue_some(queue, 1, 2)
    enqueue_some(queue, 3, delay=3600)

    html = monitor_client.get("/queues/?kind=NORMAL_QUEUE").content.decode()

    body = html[html.index("<tbody") : html.index("</tbody>")]
    cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]
    assert "AQ$_QT_ORDERS_E" not in body
    assert ">ORDERS<" in cells[0]
    # ready, waiting, processed, expired, oldest ready, enqueued, dequeued
    assert cells[3:7] == ["2", "1", "0", "0"]
    assert "title=" in cells[7]
    assert cells[8:10] == ["3", "0"]
