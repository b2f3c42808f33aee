"""Issue 16, defects 3 and 6 (and browse and remove results told apart): the queue page's summary follows the page's own enqueue and
dequeue at once, and the dashboard, the queue list, the queue page and the status views follow
changes made elsewhere without a reload (they poll, as the gateway pages do); a history restore
that missed htmx's cache gets the whole page back, not the polled fragment
(tests/pages/test_live_parts_are_partials_but_history_restores_are_pages.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_queue_page_summary_follows_its_own_enqueue_and_dequeue(
    page, live_server, login, queue, enqueue_some, page_problems
):
    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}{queue.get_absolute_url()}")
    expect(page.locator("#queue-ready-waiting")).to_have_text("0 / 0")

    panel = page.locator("#enqueue-panel")
    panel.get_by_label("Payload").fill('{"n": 1}')
    htmx_submit(page, panel.get_by_role("button", name="Enqueue"), "/enqueue/")
    expect(page.locator("#queue-ready-waiting")).to_have_text("1 / 0")
    expect(page.locator("#queue-enqueued-dequeued")).to_have_text("1 / 0")

    # A browse and a remove say which they were (they looked alike, issue 16).
    deq = page.locator("#dequeue-panel")
    deq.get_by_label("Mode", exact=True).select_option("BROWSE")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    expect(page.locator("#dequeue-outcome")).to_have_text("Browsed (kept in the queue)")
    expect(page.locator("#queue-ready-waiting")).to_have_text("1 / 0")
    deq = page.locator("#dequeue-panel")
    deq.get_by_label("Mode", exact=True).select_option("REMOVE")
    deq.get_by_label("Navigation").select_option("FIRST_MESSAGE")
    htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")
    expect(page.locator("#dequeue-outcome")).to_have_text("Removed from the queue")
    expect(page.locator("#queue-ready-waiting")).to_have_text("0 / 0")
    expect(page.locator("#queue-enqueued-dequeued")).to_have_text("1 / 1")

    # An enqueue by someone else shows by itself.
    enqueue_some(queue, {"n": 2}, {"n": 3})
    expect(page.locator("#queue-ready-waiting")).to_have_text("2 / 0")
    expect(page.locator("#queue-enqueued-dequeued")).to_have_text("3 / 1")
    page_problems.assert_none()


def test_dashboard_queue_list_and_status_views_follow_changes_made_elsewhere(
    page, live_server, login, admin_user, queue, enqueue_some, page_problems
):
    from queues import services

    login(page, "alice", "pw-alice")
    expect(page.locator('[data-count="ready"]')).to_have_text("0")
    enqueue_some(queue, {"n": 1})
    expect(page.locator('[data-count="ready"]')).to_have_text("1")

    # The queue list, filtered (the filter pushes its URL), keeps polling with its filter.
    page.goto(f"{live_server.url}/queues/")
    search = page.locator(".aq-filter").locator('input[name="q"]')
    search.fill("ORD")
    search.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]q=ORD(&|$)"))
    row = page.locator("#object-table tbody tr").filter(
        has=page.get_by_role("link", name="ORDERS", exact=True)
    )
    expect(row.locator("td").nth(4)).to_have_text("1")  # Ready (after the tick box)
    enqueue_some(queue, {"n": 2})
    expect(row.locator("td").nth(4)).to_have_text("2")

    # The status views: a queue made elsewhere appears in DBA_QUEUES.
    page.goto(f"{live_server.url}/status/?view=dba_queues")
    expect(page.locator("#status-table")).to_contain_text("ORDERS")
    services.queue_create(user=admin_user, name="LATE_ARRIVAL", queue_table=queue.queue_table)
    expect(page.locator("#status-table")).to_contain_text("LATE_ARRIVAL")
    # Not assert_none(): leaving a page can abort its poll in flight, a failed request that is
    # no fault.
    assert not page_problems.errors
