"""The console's pages in Debian's chromium: the issue's scenario and its role and input checks.

Scenario: log in as an administrator through the login form, create a queue table and a queue
through the forms, enqueue a JSON message through the HTMX form, see it in the message table,
browse it (BROWSE), dequeue it (REMOVE) and see it gone; the change log lists what was done.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit, nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def message_rows(pg):  # type: ignore[no-untyped-def]
    return pg.locator("#message-table tbody tr")


def test_admin_creates_queue_enqueues_browses_and_dequeues(
    page, live_server, login, admin_user, page_problems
):
    from core.models import ChangeLogEntry
    from queues.models import Message, Queue, QueueTable

    login(page, "alice", "pw-alice")
    shot(page, "02-dashboard")

    # A queue table through its form.
    nav(page, "Queues", "Queue tables")
    expect(page.get_by_role("heading", name="Queue tables")).to_be_visible()
    page.get_by_role("link", name="Add", exact=True).click()
    expect(page.get_by_role("heading", name="New queue table")).to_be_visible()
    page.get_by_label("Name").fill("QT_BROWSER")
    page.get_by_label("Sort order").select_option("enq_time")
    page.get_by_label("Comment").fill("made in a browser")
    shot(page, "03-queuetable-form")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Queue table QT_BROWSER")).to_be_visible()
    qt = QueueTable.objects.get(name="QT_BROWSER")
    assert qt.sort_order == "enq_time"
    assert page.url == f"{live_server.url}/queues/tables/{qt.pk}/"
    shot(page, "04-queuetable-detail")

    # A queue in it, through the queue form (the queue table comes preselected).
    page.get_by_role("link", name="Add queue").click()
    expect(page.get_by_role("heading", name="New queue")).to_be_visible()
    expect(page.get_by_label("Queue table")).to_have_value(str(qt.pk))
    page.get_by_label("Name").fill("Q_BROWSER")
    shot(page, "05-queue-form")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#queue-name")).to_have_text("Q_BROWSER")
    queue = Queue.objects.get(name="Q_BROWSER")
    assert queue.queue_table_id == qt.pk

    # The queue list shows it; open it from there.
    nav(page, "Queues", "Queues")
    expect(page.get_by_role("heading", name="Queues")).to_be_visible()
    shot(page, "06-queue-list")
    page.locator("#object-table").get_by_role("link", name="Q_BROWSER", exact=True).click()
    expect(page.locator("#queue-name")).to_have_text("Q_BROWSER")
    expect(message_rows(page).filter(has_text="widget")).to_have_count(0)

    # Enqueue a JSON message through the HTMX form.
    payload = {"order": 42, "item": "widget", "lines": [{"sku": "A-1", "qty": 3}]}
    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill(json.dumps(payload))
    panel.get_by_label("Correlation").fill("corr-browser")
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-result")).to_contain_text("Enqueued message")
    msg = Message.objects.get(queue=queue)
    assert msg.payload == payload
    assert msg.correlation == "corr-browser"
    expect(page.locator("#enqueue-result")).to_contain_text(str(msg.pk))

    # The message table shows it at once (it reloads itself after an enqueue), after a reload of
    # the page, and through the HTMX filter.
    expect(message_rows(page).filter(has_text="corr-browser")).to_have_count(1)
    page.reload()
    row = message_rows(page).filter(has_text="corr-browser")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Ready")
    expect(row).to_contain_text('"item": "widget"')
    page.locator("#message-table").scroll_into_view_if_needed()
    shot(page, "07-queue-detail-with-message")
    page.locator(".aq-filter").get_by_label("Correlation").fill("no-such-correlation")
    page.locator(".aq-filter").get_by_label("Correlation").press("Enter")
    expect(message_rows(page).filter(has_text="corr-browser")).to_have_count(0)
    page.locator(".aq-filter").get_by_label("Correlation").fill("corr-browser")
    page.locator(".aq-filter").get_by_label("Correlation").press("Enter")
    expect(message_rows(page).filter(has_text="corr-browser")).to_have_count(1)

    # Browse it: the payload shows, the message stays.
    deq = page.locator("#dequeue-panel")
    deq.get_by_label("Mode", exact=True).select_option("BROWSE")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    result = page.locator("#dequeue-result")
    expect(result).to_contain_text(f"#{msg.pk}")
    expect(result).to_contain_text('"item": "widget"')
    expect(result).to_be_in_viewport()  # not below the fold of a long form
    expect(result).to_contain_text('"sku": "A-1"')
    shot(page, "08-browse-result")
    assert Message.objects.filter(pk=msg.pk, state="READY").exists()
    page.reload()
    expect(message_rows(page).filter(has_text="corr-browser")).to_have_count(1)

    # Dequeue it (REMOVE): the payload shows once more, then the message is gone.
    deq = page.locator("#dequeue-panel")
    deq.get_by_label("Mode", exact=True).select_option("REMOVE")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    result = page.locator("#dequeue-result")
    expect(result).to_contain_text(f"#{msg.pk}")
    expect(result).to_contain_text('"order": 42')
    # The table drops it without a reload, and it stays gone after one.
    expect(message_rows(page).filter(has_text="corr-browser")).to_have_count(0)
    expect(message_rows(page)).to_contain_text(["No messages."])
    shot(page, "09-dequeue-result")
    assert not Message.objects.filter(pk=msg.pk, state__in=["READY", "WAITING"]).exists()
    page.reload()
    expect(message_rows(page).filter(has_text="corr-browser")).to_have_count(0)
    # A second REMOVE finds nothing.
    deq = page.locator("#dequeue-panel")
    deq.get_by_label("Mode", exact=True).select_option("REMOVE")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    expect(page.locator("#dequeue-result")).to_contain_text("No message.")

    # The change log lists the changes just made, newest first, by alice.
    nav(page, "Status", "Change log")
    expect(page.get_by_role("heading", name="Change log")).to_be_visible()
    table = page.locator("#object-table")
    for verb, obj in (("queue_table_create", "QT_BROWSER"), ("queue_create", "Q_BROWSER")):
        row = table.locator("tbody tr").filter(has_text=verb).filter(has_text=obj)
        expect(row).to_have_count(1)
        expect(row).to_contain_text("alice")
    shot(page, "10-changelog")
    entry = ChangeLogEntry.objects.get(verb="queue_create", object_repr="Q_BROWSER")
    table.locator("tbody tr").filter(has_text="queue_create").get_by_role("link").first.click()
    expect(page.get_by_role("heading", name=re.compile("queue_create"))).to_be_visible()
    assert page.url == f"{live_server.url}/changelog/{entry.pk}/"
    expect(page.locator("pre").nth(1)).to_contain_text("Q_BROWSER")
    shot(page, "11-changelog-detail")
    page_problems.assert_none()


def test_monitor_sees_no_controls_and_is_refused(
    page, live_server, login, admin_user, monitor_user, page_problems
):
    from queues import services
    from queues.models import Message, QueueTable

    qt = services.queue_table_create(user=admin_user, name="QT_RO", sort_order="enq_time")
    queue = services.queue_create(user=admin_user, name="Q_RO", queue_table=qt)
    services.message_enqueue(
        user=admin_user, queue=queue, messages=[services.engine.NewMessage(payload={"n": 1})]
    )

    login(page, "mona", "pw-mona")
    for path in ("/queues/", "/queues/tables/", "/queues/agents/", "/queues/privileges/"):
        page.goto(f"{live_server.url}{path}")
        expect(page.locator("h1")).to_be_visible()
        expect(page.get_by_role("link", name="Add", exact=True)).to_have_count(0)
        expect(page.get_by_role("link", name="New agent")).to_have_count(0)
        expect(page.get_by_role("link", name="Grant", exact=True)).to_have_count(0)

    page.goto(f"{live_server.url}/queues/tables/{qt.pk}/")
    expect(page.get_by_role("link", name="Add queue")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)

    page.goto(f"{live_server.url}{queue.get_absolute_url()}")
    expect(page.locator("#queue-name")).to_have_text("Q_RO")
    expect(message_rows(page)).to_have_count(1)
    expect(page.locator("#enqueue-panel")).to_have_count(0)
    for name in ("Enqueue", "Purge…", "Start", "Stop", "Edit", "Drop"):
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
        expect(page.get_by_role("link", name=name, exact=True)).to_have_count(0)
    shot(page, "12-queue-detail-monitor")

    # Browsing needs only the VIEW capability: the monitor can look at the message, and is
    # offered no other mode.
    deq = page.locator("#dequeue-panel")
    expect(deq.get_by_role("heading")).to_have_text("Browse")
    expect(deq.get_by_label("Mode", exact=True).locator("option")).to_have_text(["Browse"])
    deq.get_by_label("Mode", exact=True).select_option("BROWSE")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    expect(page.locator("#dequeue-result")).to_contain_text('"n": 1')

    # POSTs from the monitor's session, with its CSRF token, to pages that change things: 403.
    def post(path: str, data: dict) -> int:
        return page.evaluate(
            """async ([path, data]) => {
                const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
                const r = await fetch(path, {method: 'POST', redirect: 'manual',
                    headers: {'X-CSRFToken': token}, body: new URLSearchParams(data)});
                return r.status;
            }""",
            [path, data],
        )

    assert post("/queues/tables/add/", {"name": "QT_EVIL", "sort_order": "enq_time"}) == 403
    assert post(f"/queues/{queue.pk}/edit/", {"max_retries": "9", "retry_delay": "0"}) == 403
    assert post(f"/queues/{queue.pk}/enqueue/", {"payload": '{"n": 2}'}) == 403
    deq = {"navigation": "FIRST_MESSAGE", "batch": "1", "wait": "0"}
    assert post(f"/queues/{queue.pk}/dequeue/", {**deq, "mode": "REMOVE"}) == 403
    assert post(f"/queues/{queue.pk}/purge/", {"confirm": "Q_RO"}) == 403
    # The same token is good for what a monitor may do, so the 403s above are the role's.
    assert post(f"/queues/{queue.pk}/dequeue/", {**deq, "mode": "BROWSE"}) == 200
    assert not QueueTable.objects.filter(name="QT_EVIL").exists()
    assert Message.objects.filter(queue=queue).count() == 1
    queue.refresh_from_db()
    assert queue.max_retries != 9

    # The configure pages themselves are refused too.
    resp = page.goto(f"{live_server.url}/queues/tables/add/")
    assert resp is not None and resp.status == 403
    page_problems.assert_none()


def test_enqueue_form_reports_bad_input_and_enqueues_nothing(
    page, live_server, login, admin_user, operator_user, page_problems
):
    from queues import services
    from queues.models import Message

    schema = {
        "type": "object",
        "required": ["amount"],
        "properties": {"amount": {"type": "number"}, "customer": {"type": "string"}},
    }
    qt = services.queue_table_create(
        user=admin_user,
        name="QT_TYPED",
        sort_order="enq_time",
        payload_type="ORDER_T",
        payload_schema=schema,
    )
    queue = services.queue_create(user=admin_user, name="Q_TYPED", queue_table=qt)

    # An operator may enqueue, but sees no topology controls.
    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}{queue.get_absolute_url()}")
    expect(page.get_by_role("link", name="Edit", exact=True)).to_have_count(0)
    panel = page.locator("#enqueue-panel")

    # Not JSON at all.
    panel.get_by_label("Payload").fill('{"amount": 12,')
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    error = page.locator("#enqueue-panel [data-field=payload]")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Enter a valid JSON")
    expect(page.locator("#enqueue-result")).to_have_count(0)
    # What was typed is kept, so it can be corrected.
    expect(page.locator("#enqueue-panel").get_by_label("Payload")).to_have_value('{"amount": 12,')
    shot(page, "13-enqueue-invalid-json")
    assert Message.objects.filter(queue=queue).count() == 0

    # JSON that fails the queue table's schema: the error names the payload's field.
    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill('{"amount": "lots", "customer": "ACME"}')
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    error = page.locator("#enqueue-panel [data-field=payload]")
    expect(error).to_be_visible()
    expect(error).to_contain_text("payload.amount")
    expect(error).to_contain_text("number")
    expect(page.locator("#enqueue-result")).to_have_count(0)
    shot(page, "14-enqueue-schema-error")
    assert Message.objects.filter(queue=queue).count() == 0

    # A missing required property names it too.
    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill('{"customer": "ACME"}')
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-panel [data-field=payload]")).to_contain_text(
        "'amount' is a required property"
    )
    assert Message.objects.filter(queue=queue).count() == 0

    # A good payload goes in.
    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill('{"amount": 12.5, "customer": "ACME"}')
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-result")).to_contain_text("Enqueued message")
    expect(page.locator("#enqueue-panel [data-field]")).to_have_count(0)
    assert Message.objects.filter(queue=queue).count() == 1
    page_problems.assert_none()


def test_enqueue_form_takes_any_json_value_and_shows_text_as_typed(
    page, live_server, login, admin_user, operator_user, page_problems
):
    """Issue 16, defects 1 and 2: ``{}`` and ``[]`` were refused as "This field is required"
    (Django counts them empty) while ``0`` went in; non-ASCII text showed as \\u escapes."""
    from queues import services
    from queues.models import Message

    qt = services.queue_table_create(user=admin_user, name="QT_ANYJSON", sort_order="enq_time")
    queue = services.queue_create(user=admin_user, name="Q_ANYJSON", queue_table=qt)
    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}{queue.get_absolute_url()}")
    panel = page.locator("#enqueue-panel")

    typed = ["{}", "[]", "0", '"hi"', '{"t": "héllo ✓ 日本"}']
    for text in typed:
        panel.get_by_label("Payload").fill(text)
        htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
        expect(page.locator("#enqueue-result")).to_contain_text("Enqueued message")
        expect(page.locator("#enqueue-panel [data-field]")).to_have_count(0)
    stored = list(
        Message.objects.filter(queue=queue).order_by("pk").values_list("payload", flat=True)
    )
    assert stored == [json.loads(t) for t in typed]

    # "null" is no payload: refused, naming the field.
    panel.get_by_label("Payload").fill("null")
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-panel [data-field=payload]")).to_be_visible()
    assert Message.objects.filter(queue=queue).count() == len(typed)

    page.reload()
    expect(message_rows(page).filter(has_text="héllo ✓ 日本")).to_have_count(1)
    expect(page.locator("#message-table")).not_to_contain_text("\\u00e9")
    page_problems.assert_none()
