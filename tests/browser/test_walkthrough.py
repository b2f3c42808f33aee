"""A walk through every console page with a populated topology, as an operator would look at it.

Each page must load with its heading, without script errors or missing static files, and without
the page itself scrolling sideways (wide tables scroll inside their own box). A screenshot of each
page goes to ``test-artifacts/walk-*.png`` for a person to look at.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def topology(admin_user, operator_user, monitor_user):  # type: ignore[no-untyped-def]
    from queues import engine, services

    qt = services.queue_table_create(
        user=admin_user,
        name="QT_ORDERS",
        sort_order="priority",
        comment="Orders from the web shop, one consumer",
    )
    orders = services.queue_create(
        user=admin_user, name="ORDERS", queue_table=qt, max_retries=3, retention_time=3600
    )
    long_payload = {
        "order": 1001,
        "customer": {"name": "ACME Corporation International Holdings", "country": "NL"},
        "lines": [{"sku": f"SKU-{i:05d}", "qty": i, "note": "x" * 40} for i in range(12)],
        "comment": "a fairly long free text comment " * 6,
    }
    services.message_enqueue(
        user=admin_user,
        queue=orders,
        messages=[
            engine.NewMessage(
                payload=long_payload if i == 0 else {"order": 1001 + i, "total": 10.5 * i},
                priority=i % 3,
                correlation=f"web-{i}",
                sender="shop",
                type_name="ORDER",
            )
            for i in range(30)
        ],
    )
    services.message_enqueue(
        user=admin_user,
        queue=orders,
        messages=[engine.NewMessage(payload={"late": True}, delay=3600, correlation="later")],
    )
    services.message_enqueue(
        user=admin_user,
        queue=orders,
        messages=[engine.NewMessage(payload={"stale": i}, expiration=0) for i in range(3)],
    )
    services.queue_monitor_run()

    typed = services.queue_table_create(
        user=admin_user,
        name="QT_PAYMENTS",
        sort_order="priority,commit_time",
        multiple_consumers=True,
        secure=True,
        payload_type="PAYMENT_T",
        payload_schema={"type": "object", "required": ["amount"]},
        comment="Payments fan out to billing and audit",
    )
    payments = services.queue_create(user=admin_user, name="PAYMENTS", queue_table=typed)
    services.subscriber_add(user=admin_user, queue=payments, name="BILLING")
    services.subscriber_add(user=admin_user, queue=payments, name="AUDIT")
    agent = services.agent_create(user=admin_user, name="BILLING", comment="billing service")
    services.agent_enable_db_access(user=admin_user, agent=agent, db_user=operator_user)
    services.queue_privilege_grant(
        user=admin_user, queue=payments, grantee=operator_user, privilege="ALL"
    )
    services.queue_privilege_grant(
        user=admin_user, queue=payments, grantee=monitor_user, privilege="DEQUEUE"
    )
    services.queue_stop(user=admin_user, queue=payments, enqueue=True, dequeue=False)
    return {"qt": qt, "orders": orders, "typed": typed, "payments": payments}


def no_sideways_scroll(pg) -> None:  # type: ignore[no-untyped-def]
    width = pg.evaluate("document.documentElement.scrollWidth")
    view = pg.evaluate("window.innerWidth")
    assert width <= view, f"{pg.url}: the page is {width}px wide in a {view}px window"


def test_every_page_renders(page, live_server, login, topology, page_problems):
    from queues.models import Queue

    orders, payments, qt = topology["orders"], topology["payments"], topology["qt"]
    exq = Queue.objects.get(name="AQ$_QT_ORDERS_E")
    assert exq.messages.count() == 3, "the expired messages should be in the exception queue"

    page.goto(f"{live_server.url}/queues/")
    assert "/login/" in page.url, "an anonymous visitor is sent to the login page"
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".alert-danger")).to_be_visible()
    shot(page, "walk-01-login-error")
    login(page, "alice", "pw-alice")

    pages = [
        ("walk-02-dashboard", "/", "Dashboard"),
        ("walk-03-queue-list", "/queues/", "Queues"),
        ("walk-04-queuetable-list", "/queues/tables/", "Queue tables"),
        ("walk-05-queuetable-detail", qt.get_absolute_url(), "Queue table QT_ORDERS"),
        (
            "walk-06-queuetable-typed",
            topology["typed"].get_absolute_url(),
            "Queue table QT_PAYMENTS",
        ),
        ("walk-07-queue-detail", orders.get_absolute_url(), "Queue ORDERS"),
        ("walk-08-queue-multi-consumer", payments.get_absolute_url(), "Queue PAYMENTS"),
        ("walk-09-exception-queue", exq.get_absolute_url(), "Exception queue AQ$_QT_ORDERS_E"),
        ("walk-10-agents", "/queues/agents/", "AQ agents"),
        ("walk-11-privileges", "/queues/privileges/", "Queue privileges"),
        ("walk-12-status-dba-queues", "/queues/status/?view=dba_queues", "Status views"),
        ("walk-13-status-dba-queue-tables", "/queues/status/?view=dba_queue_tables", None),
        ("walk-14-status-agent-privs", "/queues/status/?view=dba_aq_agent_privs", None),
        ("walk-15-changelog", "/changelog/", "Change log"),
        ("walk-16-queuetable-add", "/queues/tables/add/", "New queue table"),
        ("walk-17-queue-add", "/queues/add/", "New queue"),
        ("walk-18-queue-edit", f"/queues/{orders.pk}/edit/", "Edit ORDERS"),
        ("walk-19-purge", f"/queues/{orders.pk}/purge/", "Purge ORDERS"),
        ("walk-20-replay", f"/queues/{exq.pk}/replay/", "Replay from AQ$_QT_ORDERS_E"),
        ("walk-21-queue-drop", f"/queues/{orders.pk}/delete/", "Drop queue ORDERS?"),
        ("walk-22-agent-add", "/queues/agents/add/", "New AQ agent"),
        ("walk-23-agent-enable", "/queues/agents/access/enable/", "Enable DB access"),
        ("walk-24-grant", "/queues/privileges/grant/", "Grant queue privilege"),
        ("walk-25-subscriber-add", f"/queues/{payments.pk}/subscribers/add/", None),
        ("walk-26-rules", "/rules/", None),
    ]
    for name, path, heading in pages:
        resp = page.goto(f"{live_server.url}{path}")
        assert resp is not None and resp.status == 200, f"{path}: {resp and resp.status}"
        h1 = page.locator("h1")
        expect(h1).to_have_count(1)
        if heading:
            expect(h1).to_have_text(heading)
        assert page.evaluate("typeof htmx") == "object", f"{path}: htmx is not loaded"
        no_sideways_scroll(page)
        shot(page, name)

    # The bar marks the section at hand: its menu and, inside it, its link.
    for path, menu, section in (
        (orders.get_absolute_url(), "Queues", "Queues"),
        (qt.get_absolute_url(), "Queues", "Queue tables"),
        ("/queues/agents/add/", "Queues", "Agents"),
        ("/queues/privileges/", "Queues", "Privileges"),
        ("/queues/status/", "Status", "Status views"),
        ("/changelog/", "Status", "Change log"),
        ("/rules/", "Rules", "Rules"),
    ):
        page.goto(f"{live_server.url}{path}")
        expect(page.locator(".navbar .nav-link.active")).to_have_text([menu])
        expect(page.locator(".navbar .dropdown-item.active")).to_have_text([section])

    # The queue page: the payload column is in sight (not scrolled off to the right) and shows
    # the messages formatted; paging works.
    page.goto(f"{live_server.url}{orders.get_absolute_url()}")
    rows = page.locator("#message-table tbody tr")
    expect(rows).to_have_count(20)
    # Scrolled down to the first row (the summary and the rate chart come first), never sideways.
    page.evaluate(
        "window.scrollTo(0, document.querySelector('#message-table tbody tr')"
        ".getBoundingClientRect().top + window.scrollY - 8)"
    )
    expect(rows.first.locator(".aq-payload")).to_be_in_viewport(ratio=0.5)
    expect(rows.filter(has_text="web-3").locator(".aq-payload")).to_contain_text('"order": 1004')
    expect(page.locator("#message-table .pagination")).to_be_visible()
    page.locator("#message-table .pagination").get_by_role("link", name="2", exact=True).click()
    expect(page.locator("#message-table tbody tr")).to_have_count(11)
    shot(page, "walk-27-queue-detail-page-2")

    # The exception queue lists where each message came from and why it is there.
    page.goto(f"{live_server.url}{exq.get_absolute_url()}")
    rows = page.locator("#message-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("ORDERS")
    expect(rows.first).to_contain_text("EXPIRED")
    expect(page.locator("#enqueue-panel")).to_have_count(0)

    # The typed queue table shows its schema as JSON.
    page.goto(f"{live_server.url}{topology['typed'].get_absolute_url()}")
    page.get_by_text("Payload schema").click()
    expect(page.locator("#payload-schema")).to_contain_text('"required": [')

    # The status views use Oracle's column names.
    page.goto(f"{live_server.url}/queues/status/?view=dba_queues")
    for column in ("QUEUE_TABLE", "MAX_RETRIES", "ENQUEUE_ENABLED", "USER_COMMENT"):
        expect(page.locator("thead")).to_contain_text(column)

    # Forms say what they do on their button.
    page.goto(f"{live_server.url}/queues/{orders.pk}/purge/")
    expect(page.get_by_role("button", name="Purge", exact=True)).to_be_visible()

    # The change log's detail page, from a row of the list.
    page.goto(f"{live_server.url}/changelog/")
    page.locator("#object-table tbody tr").first.get_by_role("link").first.click()
    expect(page.locator("h1")).to_contain_text("·")
    no_sideways_scroll(page)
    shot(page, "walk-28-changelog-detail")
    page_problems.assert_none()


def test_forms_show_errors_by_field(page, live_server, login, topology, page_problems):
    from queues.models import Queue, QueueTable

    login(page, "alice", "pw-alice")

    # A bad name and a duplicate: the errors sit under the field they concern.
    page.goto(f"{live_server.url}/queues/tables/add/")
    page.get_by_label("Name").fill("1 bad name")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("[data-field=name]")).to_contain_text("letter")
    expect(page.get_by_label("Name")).to_have_value("1 bad name")
    shot(page, "walk-29-queuetable-form-errors")
    page.get_by_label("Name").fill("QT_ORDERS")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("[data-field=name]")).to_contain_text("already exists")
    # A typed payload without a schema.
    page.get_by_label("Name").fill("QT_NEW")
    page.get_by_label("Payload type").fill("THING_T")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("[data-field=payload_schema]")).to_contain_text("Schema")
    assert not QueueTable.objects.filter(name="QT_NEW").exists()

    # Negative retries and a negative retry delay on the queue form.
    page.goto(f"{live_server.url}/queues/add/")
    page.get_by_label("Name").fill("Q_NEW")
    page.get_by_label("Queue table").select_option(label="QT_ORDERS")
    page.get_by_label("Max retries").fill("-1")
    page.get_by_label("Retry delay").fill("-5")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("[data-field=max_retries]")).to_be_visible()
    expect(page.locator("[data-field=retry_delay]")).to_be_visible()
    shot(page, "walk-30-queue-form-errors")
    assert not Queue.objects.filter(name="Q_NEW").exists()

    # Enqueue into a stopped queue: a clear error in the panel, nothing written.
    payments = topology["payments"]
    page.goto(f"{live_server.url}{payments.get_absolute_url()}")
    expect(page.locator("#queue-enabled")).to_contain_text("disabled / enabled")
    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill('{"amount": 3}')
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-panel .alert-danger")).to_contain_text("disabled")
    shot(page, "walk-31-enqueue-stopped-queue")
    assert payments.messages.count() == 0

    # Dropping a queue table that still has messages is refused with a message.
    page.goto(f"{live_server.url}{topology['qt'].get_absolute_url()}")
    page.get_by_role("link", name="Drop").click()
    page.get_by_role("button", name="Drop queue table").click()
    expect(page.locator(".alert-danger")).to_contain_text("purge its queues first")
    shot(page, "walk-32-drop-refused")
    assert QueueTable.objects.filter(name="QT_ORDERS").exists()
    page_problems.assert_none()
