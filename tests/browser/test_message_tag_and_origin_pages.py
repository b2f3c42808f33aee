"""In Debian's chromium: the enqueue form takes a Streams tag (a bad one is refused on the Tag
field and nothing is enqueued), and the message table and the browse panel show each message's
tag and origin site (this site's global name for a message enqueued here) and route."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_tag_is_enqueued_through_the_form_and_shown_with_the_origin(
    page, live_server, login, admin_user, operator_user, page_problems
):
    from queues import engine, services
    from queues.models import Message

    qt = services.queue_table_create(user=admin_user, name="QT_TAGS", sort_order="enq_time")
    queue = services.queue_create(user=admin_user, name="Q_TAGS", queue_table=qt)
    # One message that arrived from another site (as engine.receive writes it).
    conn = services.raw_connection()
    engine.enqueue(
        conn,
        engine.queue_info(conn, queue.pk),
        [
            engine.NewMessage(
                payload={"n": "remote"},
                origin_site="SITE_X.LOCALHOST",
                route=["SITE_X.LOCALHOST", "SITE_Y.LOCALHOST"],
                correlation="from-x",
            )
        ],
    )
    conn.commit()

    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}{queue.get_absolute_url()}")
    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill('{"n": "here"}')
    panel.get_by_label("Tag").fill("not-hex")
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-panel [data-field=tag]")).to_contain_text("hexadecimal")
    assert Message.objects.filter(queue=queue).count() == 1

    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Tag").fill("1f02")
    panel.get_by_label("Correlation").fill("tagged-here")
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#enqueue-result")).to_contain_text("Enqueued message")
    assert Message.objects.filter(queue=queue).count() == 2

    page.reload()
    rows = page.locator("#message-table tbody tr")
    here = rows.filter(has_text="tagged-here")
    expect(here).to_contain_text("1F02")
    expect(here).to_contain_text(settings.AQ_GLOBAL_NAME)
    remote = rows.filter(has_text="from-x")
    expect(remote).to_contain_text("SITE_X.LOCALHOST → SITE_Y.LOCALHOST")

    deq = page.locator("#dequeue-panel")
    deq.get_by_label("Mode", exact=True).select_option("BROWSE")
    deq.get_by_label("Batch").fill("2")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    result = page.locator("#dequeue-result")
    expect(result.locator("[data-origin-site]")).to_have_text(
        ["SITE_X.LOCALHOST", settings.AQ_GLOBAL_NAME]
    )
    expect(result.locator("[data-route]")).to_have_text(["SITE_X.LOCALHOST → SITE_Y.LOCALHOST"])
    expect(result.locator("[data-tag]")).to_have_text(["NULL", "1F02"])
    page_problems.assert_none()
