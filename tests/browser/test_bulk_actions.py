"""Bulk actions in Debian's chromium: an operator ticks three queues on the queue list, stops
them through the action bar and its confirmation page, reads each queue's outcome, and sees
the three stopped in the list (and the fourth untouched). The ticks survive the table's own
poll, which replaces the table every few seconds."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STOPPED = ("BULK_1", "BULK_2", "BULK_3")


@pytest.fixture
def queues(admin_user, queue_table):  # type: ignore[no-untyped-def]
    from queues import services

    return {
        name: services.queue_create(user=admin_user, name=name, queue_table=queue_table)
        for name in (*STOPPED, "BULK_KEEP")
    }


def _row(page, name: str):  # type: ignore[no-untyped-def]
    return page.locator("#object-table tbody tr").filter(
        has=page.get_by_role("link", name=name, exact=True)
    )


def test_operator_stops_three_queues_at_once(
    page, live_server, login, operator_user, queues, page_problems
):
    from queues.models import Queue

    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}/queues/")
    bar = page.locator("#bulk-form")
    expect(bar.get_by_role("button", name="Stop", exact=True)).to_be_disabled()
    # An operator may stop and purge, not drop: the bar offers what the role may do.
    expect(bar.get_by_role("button", name="Drop")).to_have_count(0)

    for name in STOPPED:
        page.get_by_label(f"Select {name}", exact=True).check()
    expect(bar.locator(".aq-bulk-count")).to_have_text("3")

    # The table replaces itself when it polls; the ticks are put back.
    with page.expect_response(
        lambda r: (
            r.url.startswith(f"{live_server.url}/queues/")
            and r.request.headers.get("hx-request") == "true"
        )
    ):
        pass
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )
    for name in STOPPED:
        expect(page.get_by_label(f"Select {name}", exact=True)).to_be_checked()
    expect(page.get_by_label("Select BULK_KEEP", exact=True)).not_to_be_checked()
    shot(page, "bulk-01-three-ticked")

    bar.get_by_role("button", name="Stop", exact=True).click()
    expect(page.get_by_role("heading", name="Stop 3 queues?")).to_be_visible()
    expect(page.locator("#bulk-objects li")).to_have_text(list(STOPPED))
    assert Queue.objects.filter(name__in=STOPPED, enqueue_enabled=False).count() == 0
    shot(page, "bulk-02-confirm")

    htmx_submit(page, page.get_by_role("button", name="Stop 3 queues"), "/queues/bulk/")
    expect(page.get_by_role("heading", name="Stop: 3 done, 0 refused")).to_be_visible()
    results = page.locator("#bulk-results tbody tr")
    expect(results).to_have_count(3)
    for i, name in enumerate(STOPPED):
        expect(results.nth(i)).to_contain_text(name)
        expect(results.nth(i)).to_contain_text("done")
    shot(page, "bulk-03-outcome")

    page.get_by_role("link", name="Back to the queues").click()
    for name in STOPPED:
        # Enq and Deq, the list's last two columns, both off.
        expect(_row(page, name).locator("td").nth(-2)).to_have_text("✘")
        expect(_row(page, name).locator("td").nth(-1)).to_have_text("✘")
    expect(_row(page, "BULK_KEEP").locator("td").nth(-2)).to_have_text("✔")
    expect(_row(page, "BULK_KEEP").locator("td").nth(-1)).to_have_text("✔")
    shot(page, "bulk-04-list-after")
    assert sorted(
        Queue.objects.filter(enqueue_enabled=False, dequeue_enabled=False)
        .filter(name__startswith="BULK_")
        .values_list("name", flat=True)
    ) == list(STOPPED)
    page_problems.assert_none()


def test_select_all_ticks_every_row_of_the_page(
    page, live_server, login, operator_user, queues, page_problems
):
    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}/queues/")

    page.get_by_label("Select all on this page").check()

    rows = page.locator("#object-table tbody tr").count()
    expect(page.locator("#bulk-form .aq-bulk-count")).to_have_text(str(rows))
    expect(page.locator("input.aq-bulk-pk:checked")).to_have_count(rows)
    page.get_by_label("Select BULK_2", exact=True).uncheck()
    expect(page.locator("#bulk-form .aq-bulk-count")).to_have_text(str(rows - 1))
    expect(page.get_by_label("Select all on this page")).not_to_be_checked()
    page_problems.assert_none()


def test_operator_stops_every_queue_that_matches_the_filter_beyond_the_page(
    page, live_server, login, operator_user, admin_user, queue_table, page_problems
):
    """Gmail's "select all N matching": two rows a page, five match the filter; ticking the
    header offers all five, the confirmation counts them and says the filter, and the action
    takes the five (and a sixth queue that does not match stays as it was)."""
    from queues import services
    from queues.models import Queue

    matching = [f"MATCH_{i}" for i in range(1, 6)]
    for name in (*matching, "UNMATCHED"):
        services.queue_create(user=admin_user, name=name, queue_table=queue_table)

    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}/queues/?q=MATCH_&per_page=2")
    banner = page.locator("#bulk-banner")
    expect(banner).to_be_hidden()

    page.get_by_label("Select all on this page").check()
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("All 2 on this page are selected.")
    expect(banner.get_by_role("button", name="Select all 5 matching this filter")).to_be_visible()
    shot(page, "bulk-05-banner")

    banner.get_by_role("button", name="Select all 5 matching this filter").click()
    expect(banner).to_contain_text("All 5 queues matching this filter are selected.")
    expect(page.locator("#bulk-form .aq-bulk-count")).to_have_text("5")
    shot(page, "bulk-06-all-matching")

    page.locator("#bulk-form").get_by_role("button", name="Stop", exact=True).click()
    expect(page.get_by_role("heading", name="Stop 5 queues?")).to_be_visible()
    expect(page.locator("#bulk-filter")).to_contain_text("5 queues match this filter now")
    expect(page.locator("#bulk-filter-terms li")).to_have_text(["Search: MATCH_"])
    expect(page.locator("#bulk-objects li")).to_have_text(matching)
    assert not Queue.objects.filter(enqueue_enabled=False, kind="NORMAL_QUEUE").exists()
    shot(page, "bulk-07-confirm-filter")

    htmx_submit(page, page.get_by_role("button", name="Stop 5 queues"), "/queues/bulk/")
    expect(page.get_by_role("heading", name="Stop: 5 done, 0 refused")).to_be_visible()
    expect(page.locator("#bulk-results tbody tr[data-outcome=done]")).to_have_count(5)
    shot(page, "bulk-08-outcome-filter")
    assert (
        sorted(
            Queue.objects.filter(
                enqueue_enabled=False, dequeue_enabled=False, kind="NORMAL_QUEUE"
            ).values_list("name", flat=True)
        )
        == matching
    )
    page_problems.assert_none()


def test_unticking_a_row_drops_all_matching_back_to_the_ticked_rows(
    page, live_server, login, operator_user, admin_user, queue_table, page_problems
):
    from queues import services

    for i in range(1, 4):
        services.queue_create(user=admin_user, name=f"MATCH_{i}", queue_table=queue_table)

    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}/queues/?q=MATCH_&per_page=2")
    page.get_by_label("Select all on this page").check()
    page.locator("#bulk-banner").get_by_role("button", name="Select all 3 matching").click()
    expect(page.locator("#bulk-form .aq-bulk-count")).to_have_text("3")

    page.get_by_label("Select MATCH_1", exact=True).uncheck()
    expect(page.locator("#bulk-banner")).to_be_hidden()
    expect(page.locator("#bulk-form .aq-bulk-count")).to_have_text("1")
    page.locator("#bulk-form").get_by_role("button", name="Stop", exact=True).click()
    expect(page.get_by_role("heading", name="Stop 1 queue?")).to_be_visible()
    expect(page.locator("#bulk-filter")).to_have_count(0)
    page_problems.assert_none()
