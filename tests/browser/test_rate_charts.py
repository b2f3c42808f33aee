"""The message-rate charts in Debian's chromium: the queue page and the dashboard draw the
sampled series from /api/rates/ with the vendored uPlot, switch range on a click, and raise no
script error."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.browser.helpers import shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_queue_page_and_the_dashboard_chart_the_sampled_rates(
    page, live_server, login, admin_user, queue, page_problems
):
    from monitoring.services import rates_sample
    from queues import engine
    from queues import services as qs

    now = timezone.now()
    rates_sample(at=now - timedelta(seconds=10))
    qs.message_enqueue(
        user=admin_user,
        queue=queue,
        messages=[engine.NewMessage(payload={"n": i}) for i in range(5)],
    )
    rates_sample(at=now)
    key = f"queue:{queue.pk}"

    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/queues/{queue.pk}/")
    page.wait_for_function(f"() => window.aqRateCharts && aqRateCharts['{key}']?.loads >= 1")
    drawn = page.evaluate(
        f"""() => {{
            const c = aqRateCharts['{key}'];
            return {{labels: c.plot.series.slice(1).map(s => s.label), data: c.plot.data,
                     canvas: !!document.querySelector('.aq-rates canvas')}};
        }}"""
    )
    assert drawn["labels"] == ["Enqueued/s", "Dequeued/s", "Depth"]
    assert drawn["data"] == [[now.timestamp()], [0.5], [0], [5]]
    assert drawn["canvas"]
    shot(page, "rates_queue")

    page.get_by_role("button", name="1 hour").click()
    page.wait_for_function(f"() => aqRateCharts['{key}'].body?.range === '1h'")
    assert page.evaluate(f"() => aqRateCharts['{key}'].plot.data") == [[], [], [], []]
    expect(page.locator(".aq-rates-empty")).to_be_visible()

    page.goto(f"{live_server.url}/")
    page.wait_for_function("() => window.aqRateCharts && aqRateCharts['global']?.loads >= 1")
    data = page.evaluate("() => aqRateCharts['global'].plot.data")
    assert data[0] == [now.timestamp()]
    assert data[1] == [0.5]  # enqueued/s across every queue
    page_problems.assert_none()
