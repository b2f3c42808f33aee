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


def _drawn(page, key: str) -> dict:  # type: ignore[no-untyped-def]
    """Once the chart of ``key`` has loaded: its series' labels, its data and whether a canvas
    is on the page."""
    page.wait_for_function(f"() => window.aqRateCharts && aqRateCharts['{key}']?.loads >= 1")
    return page.evaluate(
        f"""() => {{
            const c = aqRateCharts['{key}'];
            return {{labels: c.plot.series.slice(1).map(s => s.label), data: c.plot.data,
                     canvas: !!document.querySelector('.aq-rates canvas')}};
        }}"""
    )


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
    drawn = _drawn(page, key)
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


def test_a_propagation_page_and_a_gateway_job_page_chart_their_series(
    page, live_server, login, admin_user, fast_windows, page_problems
):
    """A window run for real by the runner between two sampler passes: the propagation's page
    draws its propagated rate and backlog; an outbound gateway job's page draws in, out and the
    backlog its source keeps for it; an inbound one's, in and out."""
    from gateway import mgwadm
    from gateway import services as gw
    from gateway.models import Job
    from jobs import services as job_services
    from monitoring.services import rates_sample
    from queues import services as qs
    from tests.jobs.helpers import run_now
    from tests.monitoring.helpers import enqueue

    qt = qs.queue_table_create(
        user=admin_user, name="QT_CHART", sort_order="enq_time", multiple_consumers=True
    )
    src = qs.queue_create(user=admin_user, name="SRC", queue_table=qt)
    single = qs.queue_table_create(user=admin_user, name="QT_CHART_DST", sort_order="enq_time")
    dst = qs.queue_create(user=admin_user, name="DST", queue_table=single)
    prop = job_services.propagation_create(
        user=admin_user, name="P_CHART", source_queue=src, destination_queue=dst
    )
    gw.ensure_default_agent()  # a transactional test's flush removed the migration's row
    mgwadm.create_msgsystem_link(
        "amqp_link", properties={"link_type": "AMQP", "host": "127.0.0.1", "port": "5672"}
    )
    mgwadm.register_foreign_queue("out_q", "amqp_link", "shop.orders")
    mgwadm.create_job("out_job", mgwadm.OUTBOUND_PROPAGATION, "SRC", "out_q@amqp_link")
    mgwadm.register_foreign_queue("in_q", "amqp_link", "shop.returns")
    mgwadm.create_job("in_job", mgwadm.INBOUND_PROPAGATION, "in_q@amqp_link", "DST")
    job, inbound = Job.objects.get(name="OUT_JOB"), Job.objects.get(name="IN_JOB")
    now = timezone.now()
    enqueue(admin_user, src, 4)
    rates_sample(at=now - timedelta(seconds=10))
    assert run_now(prop) == ["SUCCEEDED: slice"]
    rates_sample(at=now)

    login(page, "alice", "pw-alice")
    key = f"propagation:{prop.pk}"
    page.goto(f"{live_server.url}/propagations/{prop.pk}/")
    drawn = _drawn(page, key)
    assert drawn["canvas"]
    assert drawn["labels"] == ["Propagated/s", "Backlog"]
    assert drawn["data"] == [[now.timestamp()], [0.4], [0]]  # 4 messages in 10 s, none left
    shot(page, "rates_propagation")

    key = f"gateway_job:{job.pk}"
    page.goto(f"{live_server.url}/gateway/jobs/{job.pk}/")
    drawn = _drawn(page, key)
    assert drawn["canvas"]
    assert drawn["labels"] == ["In/s", "Out/s", "Backlog"]
    # The job never ran (no agent): nothing in or out, its 4 copies still wait at the source.
    assert drawn["data"] == [[now.timestamp()], [0], [0], [4]]

    # An inbound job's foreign source has no backlog the console reads: no such series drawn.
    page.goto(f"{live_server.url}/gateway/jobs/{inbound.pk}/")
    drawn = _drawn(page, f"gateway_job:{inbound.pk}")
    assert drawn["labels"] == ["In/s", "Out/s"]
    assert drawn["data"] == [[now.timestamp()], [0], [0]]
    page_problems.assert_none()


def test_a_chart_follows_its_cards_width_and_never_widens_the_page(
    page, live_server, login, admin_user, page_problems
):
    """Drawn for a 1,400-pixel window, the dashboard's chart is narrowed with the window at
    once (the page never scrolls sideways, even before the chart redraws) and follows its card
    when only the page's layout narrows it (no window resize event: a scroll bar, a panel)."""
    login(page, "alice", "pw-alice")
    page.wait_for_function("() => window.aqRateCharts && aqRateCharts['global']?.loads >= 1")
    width = "() => [aqRateCharts['global'].plot.width, document.querySelector('.aq-rates-plot').clientWidth]"
    drawn, holder = page.evaluate(width)
    assert drawn == holder > 1200

    page.set_viewport_size({"width": 1100, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 1100
    page.wait_for_function(f"() => {{ const [d, h] = ({width})(); return d === h && h < 1100; }}")

    page.evaluate("document.querySelector('main').style.maxWidth = '700px'")
    page.wait_for_function(f"() => {{ const [d, h] = ({width})(); return d === h && h < 700; }}")
    page_problems.assert_none()
