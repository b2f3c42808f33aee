"""The gateway pages in Debian's chromium: an administrator creates an AMQP link (the form asks
the type first), tests its connection (a closed port: the reason shows in place), registers a
foreign queue, creates an outbound job, sees it on the live jobs list, disables, enables and
removes it. Screenshots go to test-artifacts/ and /tmp/gateway_*.png."""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import artifact_path, nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    shot(page, name)
    shutil.copy(artifact_path(name), f"/tmp/{name}.png")


def test_a_link_a_foreign_queue_and_a_job_from_the_pages(
    page, live_server, login, admin_user, page_problems
):
    from gateway import services as gw
    from gateway.models import ForeignQueue, Job, Link
    from queues import services as qs

    gw.ensure_default_agent()  # a transactional test's flush removed the migration's row
    qt = qs.queue_table_create(user=admin_user, name="QT_GW", sort_order="enq_time")
    qs.queue_create(user=admin_user, name="ORDERS", queue_table=qt)

    login(page, "alice", "pw-alice")
    nav(page, "Gateway", "Gateway")
    expect(page.locator("#agent-overview")).to_contain_text("DEFAULT_AGENT")
    _shot(page, "gateway_dashboard")

    # A link: the type first, then that type's properties.
    page.locator("#gateway-nav").get_by_role("link", name="Links").click()
    page.locator("#add-button").click()
    page.get_by_label("Type", exact=True).select_option("AMQP")
    page.get_by_role("button", name="Continue").click()
    page.get_by_label("Name", exact=True).fill("RABBIT_UI")
    page.get_by_label("host (required)", exact=True).fill("127.0.0.1")
    page.get_by_label("port", exact=True).fill("1")
    page.get_by_label("Password", exact=True).fill("not-shown-anywhere")
    _shot(page, "gateway_link_form")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#link-name")).to_have_text("RABBIT_UI")
    expect(page.locator("#link-guarantees")).to_contain_text("AT_LEAST_ONCE")
    assert "not-shown-anywhere" not in page.content()

    # Test connection: the answer replaces the result box in place.
    page.locator("#test-connection").click()
    expect(page.locator("[data-test-result]")).to_contain_text("Connection failed")
    _shot(page, "gateway_link_detail")

    # A foreign queue on it.
    page.get_by_role("link", name="Register a foreign queue").click()
    expect(page.locator("#form-note")).to_contain_text("creates nothing in the foreign system")
    page.get_by_label("Name", exact=True).fill("OUT_UI")
    page.get_by_label("Provider name", exact=True).fill("mgw.out.ui")
    page.get_by_role("button", name="Register").click()
    expect(page.locator("[data-foreign-queue='OUT_UI@RABBIT_UI']")).to_contain_text("mgw.out.ui")
    assert ForeignQueue.objects.filter(name="OUT_UI", link__name="RABBIT_UI").exists()

    # An outbound job from ORDERS to it.
    page.locator("#gateway-nav").get_by_role("link", name="Jobs").click()
    page.locator("#add-button").click()
    page.locator("#direction-outbound").click()
    page.get_by_label("Name", exact=True).fill("JOB_UI")
    page.get_by_label("Source", exact=True).select_option("ORDERS")
    page.get_by_label("Destination", exact=True).select_option("OUT_UI@RABBIT_UI")
    page.get_by_label("MsgBatchSize", exact=True).fill("10")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#job-name")).to_have_text("JOB_UI")
    expect(page.locator("#job-state")).to_contain_text("READY")
    _shot(page, "gateway_job_detail")

    # On the jobs list, which refreshes itself.
    page.locator("#gateway-nav").get_by_role("link", name="Jobs").click()
    row = page.locator("[data-job='JOB_UI']")
    expect(row).to_contain_text("ORDERS")
    expect(row).to_contain_text("OUT_UI@RABBIT_UI")
    expect(row).to_contain_text("0/16")
    Job.objects.filter(name="JOB_UI").update(propagated_msgs=42)
    expect(row).to_contain_text("42")  # the table polled itself
    _shot(page, "gateway_jobs")

    # Disable, enable, remove with Force.
    row.get_by_role("link", name="JOB_UI").click()
    page.get_by_role("button", name="Disable").click()
    expect(page.locator("#job-enabled")).to_have_text("no")
    page.get_by_role("button", name="Enable").click()
    expect(page.locator("#job-enabled")).to_have_text("yes")
    page.locator("#job-actions").get_by_role("link", name="Remove").click()
    expect(page.locator("#force-warning")).to_be_visible()
    page.get_by_label("Force", exact=True).check()
    page.get_by_role("button", name="Remove job").click()
    expect(page).to_have_url(re.compile(r"/gateway/jobs/$"))
    expect(page.locator("[data-job='JOB_UI']")).to_have_count(0)
    assert not Job.objects.exists() and Link.objects.filter(name="RABBIT_UI").exists()
    page_problems.assert_none()


def test_an_agent_over_its_memory_limit_is_flagged_and_no_error_shows_as_none(
    page, live_server, login, admin_user, page_problems
):
    """Issue 16, defect 7: 105 of 64 MB showed no warning, and "Last error" showed a red "—"
    when there was none."""
    from gateway import services as gw
    from gateway.models import Agent

    agent = gw.ensure_default_agent()
    # What the agent's heartbeat writes (gateway/lifecycle.py): its process's RSS.
    Agent.objects.filter(pk=agent.pk).update(memory_mb=105.0, max_memory=64)

    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/gateway/agents/{agent.pk}/")
    expect(page.locator("#agent-memory")).to_contain_text("105 of 64 MB")
    expect(page.locator("#agent-memory .text-bg-warning")).to_have_text("over the limit")
    expect(page.locator("#agent-last-error")).to_have_text("none")
    expect(page.locator("#agent-last-error .text-danger")).to_have_count(0)

    nav(page, "Gateway", "Gateway")
    expect(page.locator(f"[data-over-memory={agent.name}]")).to_be_visible()

    Agent.objects.filter(pk=agent.pk).update(memory_mb=40.0)
    page.goto(f"{live_server.url}/gateway/agents/{agent.pk}/")
    expect(page.locator("#agent-memory")).to_contain_text("40 of 64 MB")
    expect(page.locator("#agent-memory .text-bg-warning")).to_have_count(0)
    page_problems.assert_none()
