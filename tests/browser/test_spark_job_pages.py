"""The Spark job pages in Debian's chromium: an operator submits a dry run through the form, finds
it in the list, opens it and cancels it.

No Celery worker runs here, so a submitted job stays SUBMITTED until it is cancelled (which then
happens at once, as for a job no worker took yet). Its task is sent to a queue of its own, which
the test empties afterwards so no later worker picks it up.

The docs screenshot (``docs/img/spark-jobs.png``) is written when ``AQ_DOCS_SCREENSHOTS=1``;
otherwise it goes to ``test-artifacts/`` like every other screenshot.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import artifact_path, nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
TASK_QUEUE = "spark-browser-test"


@pytest.fixture(autouse=True)
def spark_task_queue(settings) -> Iterator[None]:
    """Submitted jobs' tasks go to a queue no worker listens to, emptied at the end."""
    settings.AQ_SPARK = {**settings.AQ_SPARK, "QUEUE": TASK_QUEUE}
    yield
    from console.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(TASK_QUEUE)


@pytest.fixture
def spark_queues(admin_user) -> dict[str, Any]:
    from jobs import services
    from queues import engine
    from queues import services as qs

    sc = qs.queue_table_create(user=admin_user, name="QT_ORDERS", sort_order="enq_time")
    mc = qs.queue_table_create(
        user=admin_user, name="QT_EVENTS", sort_order="enq_time", multiple_consumers=True
    )
    out = {
        n: qs.queue_create(user=admin_user, name=n, queue_table=sc)
        for n in ("ORDERS", "ORDERS_EU", "ORDERS_ARCHIVE")
    }
    out["EVENTS"] = qs.queue_create(user=admin_user, name="EVENTS", queue_table=mc)
    out["P_EVENTS_ARCHIVE"] = services.propagation_create(
        user=admin_user,
        name="P_EVENTS_ARCHIVE",
        source_queue=out["EVENTS"],
        destination_queue=out["ORDERS_ARCHIVE"],
    )
    qs.message_enqueue(
        user=admin_user,
        queue=out["ORDERS"],
        messages=[engine.NewMessage(payload={"n": i, "region": "EU"}) for i in range(5)],
    )
    return out


def save_docs_shot(page: Any, name: str) -> Path:
    if os.environ.get("AQ_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        path = DOCS_IMG / f"{name}.png"
    else:
        path = artifact_path(name)
    page.screenshot(path=str(path), full_page=True)
    return path


def test_an_operator_submits_a_dry_run_sees_it_listed_and_cancels_it(
    page, live_server, login, admin_user, operator_user, spark_queues, page_problems
):
    from jobs import services
    from jobs.models import SparkJob

    # Another job, submitted earlier through the service, so the list has more than one row.
    services.spark_job_submit(
        user=admin_user,
        source_queue=spark_queues["EVENTS"],
        propagations=[spark_queues["P_EVENTS_ARCHIVE"]],
        mode="MOVE",
        name="drain events",
    )

    login(page, "oscar", "pw-oscar")
    nav(page, "Propagation", "Spark jobs")
    expect(page.get_by_role("heading", name="Spark jobs")).to_be_visible()
    assert page.url == f"{live_server.url}/spark/"
    expect(page.locator("tr[data-spark-job]")).to_have_count(1)

    # The form: source, two destinations, a rule condition, a dry run.
    page.get_by_role("link", name="Submit a job").click()
    expect(page.get_by_role("heading", name="Submit a Spark job")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("EU orders, dry run")
    page.get_by_label("Source queue").select_option(label="ORDERS")
    page.get_by_label("Destination queues").select_option(label=["ORDERS_ARCHIVE", "ORDERS_EU"])
    page.get_by_label("A rule condition").check()
    page.get_by_label("Condition", exact=True).fill(":msg.region = 'EU'")
    page.get_by_label("Dry run").check()
    page.get_by_label("Memory per executor").fill("512m")
    shot(page, "spark-01-form")
    page.get_by_role("button", name="Submit", exact=True).click()

    # Its page: SUBMITTED (no worker takes it here), polling while it is live.
    expect(page.get_by_role("heading", name=re.compile(r"Spark job \d+"))).to_be_visible()
    job = SparkJob.objects.get(name="EU orders, dry run")
    assert page.url == f"{live_server.url}/spark/{job.pk}/"
    assert (job.state, job.dry_run, job.submitted_by) == ("SUBMITTED", True, "oscar")
    assert job.condition == ":msg.region = 'EU'"
    assert sorted(job.destinations.values_list("queue__name", flat=True)) == [
        "ORDERS_ARCHIVE",
        "ORDERS_EU",
    ]
    expect(page.locator("#spark-state")).to_have_text("Submitted")
    expect(page.locator("#spark-status")).to_have_attribute("hx-trigger", "every 2s")
    expect(page.locator("#spark-mode")).to_contain_text("dry run")

    # The list shows it, Submitted, with the dry-run badge.
    page.get_by_role("link", name="All Spark jobs").click()
    row = page.locator(f'tr[data-spark-job="{job.pk}"]')
    expect(row).to_contain_text("EU orders, dry run")
    expect(row.locator("[data-spark-state]")).to_have_text("Submitted")
    expect(row.locator("[data-dry-run]")).to_be_visible()
    expect(row).to_contain_text("ORDERS_ARCHIVE")
    # The state filter narrows the live table in place.
    page.get_by_label("State", exact=True).select_option("CANCELLED")
    expect(page.locator("tr[data-spark-job]")).to_have_count(0)
    page.get_by_label("State", exact=True).select_option("SUBMITTED")
    expect(page.locator("tr[data-spark-job]")).to_have_count(2)

    # Open it from the list and cancel it.
    row.get_by_role("link", name="EU orders, dry run").click()
    expect(page.locator("#spark-state")).to_have_text("Submitted")
    page.get_by_role("button", name="Cancel job").click()
    expect(page.locator("#spark-state")).to_have_text("Cancelled")
    expect(page.locator(".alert-success")).to_contain_text("cancel requested")
    expect(page.get_by_role("button", name="Re-run")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    assert page.locator("#spark-status").get_attribute("hx-trigger") is None  # polling stopped
    job.refresh_from_db()
    assert (job.state, job.cancel_requested) == ("CANCELLED", True)
    shot(page, "spark-02-detail-cancelled")

    # Back on the list: one Cancelled, one still Submitted.
    page.get_by_role("link", name="All Spark jobs").click()
    expect(page.locator(f'tr[data-spark-job="{job.pk}"] [data-spark-state]')).to_have_text(
        "Cancelled"
    )
    expect(page.locator("[data-spark-state=SUBMITTED]")).to_have_count(1)
    save_docs_shot(page, "spark-jobs")
    page_problems.assert_none()


def test_a_bad_condition_comes_back_on_its_field(
    page, live_server, login, operator_user, spark_queues, page_problems
):
    from jobs.models import SparkJob

    login(page, "oscar", "pw-oscar")
    page.goto(f"{live_server.url}/spark/new/")
    page.get_by_label("Source queue").select_option(label="ORDERS")
    page.get_by_label("Destination queues").select_option(label="ORDERS_EU")
    page.get_by_label("A rule condition").check()
    page.get_by_label("Condition", exact=True).fill(":msg.region = = 'EU'")
    page.get_by_role("button", name="Submit", exact=True).click()

    expect(page.locator('[data-field="condition"]')).to_be_visible()
    expect(page.get_by_label("Condition", exact=True)).to_have_value(":msg.region = = 'EU'")
    assert SparkJob.objects.count() == 0
    page_problems.assert_none()


def test_a_monitor_sees_the_jobs_but_no_buttons(
    page, live_server, login, admin_user, monitor_user, spark_queues, page_problems
):
    from jobs import services

    job = services.spark_job_submit(
        user=admin_user,
        source_queue=spark_queues["ORDERS"],
        destinations=[spark_queues["ORDERS_EU"]],
    )

    login(page, "mona", "pw-mona")
    page.goto(f"{live_server.url}/spark/")
    expect(page.locator(f'tr[data-spark-job="{job.pk}"]')).to_be_visible()
    expect(page.get_by_role("link", name="Submit a job")).to_have_count(0)
    page.goto(f"{live_server.url}/spark/{job.pk}/")
    expect(page.locator("#spark-state")).to_have_text("Submitted")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    page_problems.assert_none()
