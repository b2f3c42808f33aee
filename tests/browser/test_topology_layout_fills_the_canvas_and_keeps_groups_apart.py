"""The topology graph's layout in Debian's chromium, on a picture like the demo's: this site's
queues, a linked site (database link), a gateway link with its foreign queues and one without. Unfiltered,
the drawing fills the canvas (it was once a narrow band of small nodes); filtered or not, no two
top-level boxes (sites, gateway links) overlap (a site's box once covered a gateway link's)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from tests.browser.helpers import shot
from tests.gateway.helpers import CLOSED
from tests.sites.remote_queues import remote_hub

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The top-level boxes' rendered bounding boxes, the drawing's, the canvas's size and whether
# each pair of boxes overlaps (with the names, to say which).
MEASURE = """() => {
    const shown = aqGraph.elements().not('.hidden');
    const tops = aqGraph.nodes('[?isGroup]').not('.hidden').filter(g => g.parent().empty());
    const boxes = tops.map(g => ({name: g.data('name'), ...g.renderedBoundingBox(
        {includeLabels: false, includeOverlays: false})}));
    const clashes = [];
    for (let i = 0; i < boxes.length; i++)
        for (let j = i + 1; j < boxes.length; j++) {
            const a = boxes[i], b = boxes[j];
            if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2)
                clashes.push([a.name, b.name]);
        }
    const bb = shown.renderedBoundingBox({includeLabels: false, includeOverlays: false});
    return {groups: boxes.map(b => b.name).sort(), clashes, w: bb.w, h: bb.h,
            x1: bb.x1, y1: bb.y1, x2: bb.x2, y2: bb.y2,
            width: aqGraph.width(), height: aqGraph.height()};
}"""


def build(user: Any, site: Any) -> None:
    """Here ORDERS → SHIPPING → BILLING, ORDERS → AUDIT, SRC → B_HUB@SITE_B (and site_b's own
    B_HUB → B_LOCAL and B_HUB → SRC back here); ORDERS → OUT_Q@RABBIT and IN_Q@RABBIT →
    BILLING through a gateway link."""
    from gateway import services as gw
    from jobs import services as js
    from queues import services as qs
    from sites import services as ss

    remote_hub(site, settings.AQ_GLOBAL_NAME)
    ss.database_link_create(user=user, name="SITE_B", **site.link_fields())
    mc = qs.queue_table_create(user=user, name="QT_MC", multiple_consumers=True)
    sc = qs.queue_table_create(user=user, name="QT_SC")
    src = qs.queue_create(user=user, name="SRC", queue_table=mc)
    orders = qs.queue_create(user=user, name="ORDERS", queue_table=mc)
    shipping = qs.queue_create(user=user, name="SHIPPING", queue_table=mc)
    billing = qs.queue_create(user=user, name="BILLING", queue_table=sc)
    audit = qs.queue_create(user=user, name="AUDIT", queue_table=sc)
    for name, a, b in (
        ("SRC_TO_B", src, "B_HUB@SITE_B"),
        ("ORDERS_SHIP", orders, shipping),
        ("SHIP_BILL", shipping, billing),
        ("ORDERS_AUDIT", orders, audit),
    ):
        js.propagation_create(user=user, name=name, source_queue=a, destination_queue=b)
    rabbit = gw.link_create(user=user, name="RABBIT", link_type="AMQP", properties=CLOSED)
    gw.foreign_queue_register(user=user, name="OUT_Q", link=rabbit, provider_queue="mgw.out")
    gw.foreign_queue_register(user=user, name="IN_Q", link=rabbit, provider_queue="mgw.in")
    # A link with no foreign queue yet: an empty box, which has a position of its own (it was
    # once left where it was first drawn, over this site's box).
    gw.link_create(user=user, name="SPARE", link_type="AMQP", properties=CLOSED)
    gw.job_create(
        user=user,
        job_name="ORDERS_OUT",
        propagation_type="OUTBOUND",
        source="ORDERS",
        destination="OUT_Q@RABBIT",
    )
    gw.job_create(
        user=user,
        job_name="BILLING_IN",
        propagation_type="INBOUND",
        source="IN_Q@RABBIT",
        destination="BILLING",
    )


def fills(m: dict) -> bool:
    """The drawing covers at least half the canvas's width and half its height, inside it."""
    inside = m["x1"] >= -1 and m["y1"] >= -1 and m["x2"] <= m["width"] + 1
    inside = inside and m["y2"] <= m["height"] + 1
    return inside and m["w"] >= 0.5 * m["width"] and m["h"] >= 0.5 * m["height"]


@pytest.mark.parametrize("width", [1280, 1600])
def test_the_layout_fills_the_canvas_and_no_two_boxes_overlap(
    page, live_server, login, admin_user, site, page_problems, width
):
    build(admin_user, site)
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/propagations/topology/")
    page.wait_for_function("() => window.aqGraph && aqGraph.nodes('[?isGroup]').length === 4")

    whole = page.evaluate(MEASURE)
    shot(page, f"topology-layout-whole-{width}")
    assert whole["groups"] == sorted(
        [settings.AQ_GLOBAL_NAME, "SITE_B.LOCALHOST", "RABBIT", "SPARE"]
    )
    assert whole["clashes"] == [], whole
    assert fills(whole), whole

    # Filtered to the queues that reach the gateway and the other site: their boxes stay apart.
    for term in ("orders", "q", "b"):
        page.get_by_label("Filter by queue name").fill(term)
        page.wait_for_function("() => aqGraph.nodes('.match').length > 0")
        part = page.evaluate(MEASURE)
        shot(page, f"topology-layout-filter-{term}-{width}")
        assert len(part["groups"]) >= 2, (term, part)
        assert part["clashes"] == [], (term, part)
    page.get_by_label("Filter by queue name").fill("")
    page.wait_for_function("() => aqGraph.elements('.hidden').length === 0")
    again = page.evaluate(MEASURE)
    assert again["clashes"] == [] and fills(again), again
    page_problems.assert_none()
