"""Parallel queues in Debian's chromium: an administrator creates a logical queue through the
form (a bad partition count is refused on the field first), reads its mapping and balance, sets
a partition's purpose and rebuilds the ring after an instance joins; the page fits its window."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_creates_reads_annotates_and_rebuilds_a_logical_queue(
    page, live_server, login, admin_user, page_problems
):
    from instances.services import instance_heartbeat
    from parallel.models import LogicalQueue

    for name in ("n1", "n2", "n3"):
        instance_heartbeat(name=name, host=f"h-{name}", worker=f"w@{name}")
    login(page, "alice", "pw-alice")
    nav(page, "Queues", "Parallel queues")
    expect(page.get_by_role("heading", name="Parallel queues")).to_be_visible()
    page.get_by_role("link", name="Add", exact=True).click()
    page.get_by_label("Name").fill("ORDERS")
    page.get_by_label("Partitions").fill("0")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("1 to 256 partitions")).to_be_visible()
    assert not LogicalQueue.objects.exists()

    page.get_by_label("Partitions").fill("3")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Logical queue ORDERS")).to_be_visible()
    expect(page.locator(".navbar .nav-link.active")).to_have_text(["Queues"])
    expect(page.locator(".navbar .dropdown-item.active")).to_have_text(["Parallel queues"])
    rows = page.locator("#balance tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_contain_text("ORDERS_P2")
    expect(rows.nth(1)).to_contain_text("n2")
    expect(page.locator("#balance-ratio")).to_contain_text("ratio 1.00")  # all empty
    expect(page.locator("#balance-ratio")).not_to_contain_text("imbalanced")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.evaluate("window.innerWidth"), f"the page is {width}px wide"
    shot(page, "parallel-queue")

    rows.nth(0).get_by_role("link", name="edit").click()
    page.get_by_label("Purpose").fill("EU orders")
    page.get_by_role("button", name="Save").click()
    expect(page.locator('#balance tr[data-partition="ORDERS_P1"]')).to_contain_text("EU orders")

    instance_heartbeat(name="n4", host="h-n4", worker="w@n4")
    page.get_by_role("button", name="Rebuild").click()
    expect(page.get_by_text("Ring rebuilt over")).to_be_visible()
    expect(page.locator('#balance tr[data-partition="ORDERS_P3"]')).to_contain_text("n4")
    page_problems.assert_none()
