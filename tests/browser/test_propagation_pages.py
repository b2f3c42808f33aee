"""The propagation pages in Debian's chromium: the topology graph (Cytoscape.js from the project's
static files), its clicks and live refresh, 200 queues, the list and detail pages' live HTMX
parts and action buttons, and "trace a message" through two hops.

Screenshots for the docs (``docs/img/topology.png``, ``docs/img/propagation-schedules.png``) are
written by the last test when ``AQ_DOCS_SCREENSHOTS=1``; otherwise it saves them to
``test-artifacts/`` like every other screenshot.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from tests.browser.helpers import artifact_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"

# The graph's colours for Bootstrap's names (static/console/topology.js).
GREY, GREEN, RED, CYAN = "#6c757d", "#198754", "#dc3545", "#0aa2c0"


@pytest.fixture(autouse=True)
def fast_windows(settings):
    """Short slices and back-off so an in-process run returns soon after its source goes idle."""
    settings.AQ_PROPAGATION = {
        **settings.AQ_PROPAGATION,
        "SLICE_S": 0.5,
        "HEARTBEAT_S": 0.1,
        "BACKOFF_MIN_S": 60,
        "BACKOFF_MAX_S": 600,
    }


# --- building topologies through the services ------------------------------------------------


def mc_table(user: Any, name: str = "QT_MC") -> Any:
    from queues import services as qs

    return qs.queue_table_create(
        user=user, name=name, sort_order="enq_time", multiple_consumers=True
    )


def make_queues(user: Any, table: Any, names: list[str]) -> dict[str, Any]:
    from queues import services as qs

    return {n: qs.queue_create(user=user, name=n, queue_table=table) for n in names}


def propagate(user: Any, src: Any, dst: Any, **kw: Any) -> Any:
    from jobs import services

    kw.setdefault("name", f"{src.name}_TO_{dst.name}")
    return services.propagation_create(user=user, source_queue=src, destination_queue=dst, **kw)


def enqueue(queue: Any, payloads: list[Any]) -> list[int]:
    from queues import engine
    from queues import services as qs

    return qs.message_enqueue(
        user=None, queue=queue, messages=[engine.NewMessage(payload=p) for p in payloads]
    )


def run_now(propagation: Any) -> list[str]:
    """Dispatch due windows and execute this propagation's run here, as a worker would."""
    from jobs import runner, services
    from jobs.models import PropagationRun
    from queues import services as qs

    services.propagation_dispatch(send=False)
    connection.close()  # the runner uses its own sessions
    return [
        runner.execute(run.pk, conninfo=qs.conninfo(), worker="browser-test", pid=0)
        for run in PropagationRun.objects.filter(propagation=propagation, state="QUEUED")
    ]


def rule_set(user: Any, name: str, *conditions: str, negative: bool = False) -> Any:
    from rules import services as rs

    s = rs.rule_set_create(user=user, name=name)
    for i, cond in enumerate(conditions):
        rule = rs.rule_create(user=user, name=f"{name}_R{i}", condition=cond)
        rs.rule_set_add_rule(user=user, rule_set=s, rule=rule)
    return s


# --- the graph ---------------------------------------------------------------------------------


def open_graph(page: Any, url: str, nodes: int) -> None:
    page.goto(url)
    page.wait_for_function(f"() => window.aqGraph && window.aqGraph.nodes().length === {nodes}")


def graph(page: Any) -> dict[str, Any]:
    """What Cytoscape drew: each node's label, size and position, each edge's state and style."""
    return page.evaluate(
        """() => ({
            nodes: Object.fromEntries(aqGraph.nodes().map(n => [n.data('name'), {
                label: n.style('label'), width: n.renderedWidth() / aqGraph.zoom(),
                pos: n.position()}])),
            edges: Object.fromEntries(aqGraph.edges().map(e => [e.data('name'), {
                state: e.data('state'), label: e.style('label'), colour: e.data('color'),
                dashed: e.style('line-style') === 'dashed',
                source: e.source().data('name'), target: e.target().data('name')}])),
        })"""
    )


def click_element(page: Any, element_id: str) -> None:
    """A real mouse click where Cytoscape drew the element (an edge: its midpoint)."""
    x, y = page.evaluate(
        """(id) => {
            const ele = aqGraph.getElementById(id);
            const p = ele.isNode() ? ele.renderedPosition() : ele.renderedMidpoint();
            const box = aqGraph.container().getBoundingClientRect();
            return [box.left + p.x, box.top + p.y];
        }""",
        element_id,
    )
    page.mouse.click(x, y)


def test_the_graph_draws_queues_and_propagations_and_opens_them_on_click(
    page, live_server, login, admin_user, page_problems
):
    from jobs import services

    qs = make_queues(admin_user, mc_table(admin_user), ["IN", "HUB", "OUT"])
    in_hub = propagate(admin_user, qs["IN"], qs["HUB"])
    hub_out = propagate(admin_user, qs["HUB"], qs["OUT"])
    services.schedule_disable(user=admin_user, propagation=hub_out)
    enqueue(qs["IN"], [{"n": i} for i in range(25)])

    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/propagations/")
    page.get_by_role("link", name="Topology").click()
    page.wait_for_function("() => window.aqGraph && window.aqGraph.nodes().length === 3")
    assert page.url.startswith(f"{live_server.url}/propagations/topology/")

    g = graph(page)
    assert {n: d["label"] for n, d in g["nodes"].items()} == {
        "IN": "IN (25)",
        "HUB": "HUB (0)",
        "OUT": "OUT (0)",
    }
    assert g["nodes"]["IN"]["width"] > g["nodes"]["HUB"]["width"]  # depth shows in the size
    assert g["edges"]["IN_TO_HUB"] == {
        "state": "idle",
        "label": "0.0/s · 25 behind",
        "colour": CYAN,
        "dashed": False,
        "source": "IN",
        "target": "HUB",
    }
    assert g["edges"]["HUB_TO_OUT"]["state"] == "disabled"
    assert g["edges"]["HUB_TO_OUT"]["colour"] == GREY and g["edges"]["HUB_TO_OUT"]["dashed"]
    # The legend and the list under the graph say the same with words.
    expect(page.locator("#topology-legend [data-state=disabled]")).to_have_text("Disabled")
    page.locator("#topology-list summary").click()
    expect(page.locator("#topology-list").get_by_role("link", name="HUB_TO_OUT")).to_be_visible()

    # The page refreshes its data in place: the edge turns from disabled to idle, nothing moves.
    services.schedule_enable(user=admin_user, propagation=hub_out)
    page.wait_for_function(
        "(id) => aqGraph.getElementById(id).data('state') === 'idle'",
        arg=f"p{hub_out.pk}",
        timeout=15_000,
    )
    after = graph(page)
    assert after["edges"]["HUB_TO_OUT"]["colour"] == CYAN
    assert not after["edges"]["HUB_TO_OUT"]["dashed"]
    assert {n: d["pos"] for n, d in after["nodes"].items()} == {
        n: d["pos"] for n, d in g["nodes"].items()
    }

    # Hovering says what an element is; clicking opens its page.
    box = page.locator("#topology").bounding_box()
    x, y = page.evaluate(
        "(id) => { const p = aqGraph.getElementById(id).renderedMidpoint(); return [p.x, p.y]; }",
        f"p{in_hub.pk}",
    )
    page.mouse.move(box["x"] + x, box["y"] + y)
    expect(page.locator("#topology-info")).to_contain_text("Propagation IN_TO_HUB")
    expect(page.locator("#topology-info")).to_contain_text("IN → HUB")
    click_element(page, f"p{in_hub.pk}")
    page.wait_for_url(f"{live_server.url}/propagations/{in_hub.pk}/")
    expect(page.locator("#propagation-name")).to_have_text("IN_TO_HUB")

    page.go_back()
    page.wait_for_function("() => window.aqGraph && window.aqGraph.nodes().length === 3")
    click_element(page, f"q{qs['OUT'].pk}")
    page.wait_for_url(f"{live_server.url}/queues/{qs['OUT'].pk}/")
    expect(page.locator("#queue-name")).to_have_text("OUT")
    page_problems.assert_none()


def build_large_topology(user: Any, hubs: int = 20, ingest: int = 5, leaves: int = 175) -> Any:
    """``ingest`` source queues feed ``hubs`` hubs (two each); every hub fans out to its leaves,
    and every fifth leaf is fed by a second hub too: 200 queues and 250 propagations."""
    table = mc_table(user)
    ins = list(make_queues(user, table, [f"INGEST_{i:02d}" for i in range(ingest)]).values())
    hub = list(make_queues(user, table, [f"HUB_{i:02d}" for i in range(hubs)]).values())
    leaf = list(make_queues(user, table, [f"LEAF_{i:03d}" for i in range(leaves)]).values())
    props = []
    for i, h in enumerate(hub):
        props.append(propagate(user, ins[i % ingest], h))
        props.append(propagate(user, ins[(i + 2) % ingest], h))
    for i, q in enumerate(leaf):
        props.append(propagate(user, hub[i % hubs], q))
        if i % 5 == 0:
            props.append(propagate(user, hub[(i + 7) % hubs], q))
    for i, q in enumerate(ins):
        enqueue(q, [{"n": n} for n in range(10 ** (i % 4))])
    return props


def test_two_hundred_queues_load_lay_out_readably_and_filter_by_name(
    page, live_server, login, admin_user, page_problems
):
    props = build_large_topology(admin_user)
    assert len(props) == 250

    login(page, "alice", "pw-alice")
    started = time.monotonic()
    open_graph(page, f"{live_server.url}/propagations/topology/", 200)
    loaded = time.monotonic() - started
    # The force-directed layout takes 1-3 s on a quiet machine; the bound leaves room for a busy one.
    assert loaded < 15, f"200 queues took {loaded:.1f} s to load and lay out"
    assert page.evaluate("() => aqGraph.edges().length") == 250
    page.screenshot(path=str(artifact_path("topology-200")))

    # Readable: no queue is drawn over another, and no two labels drawn overlap. At this zoom the
    # busiest queues (the hubs) keep their names as landmarks; the rest show on zoom or hover.
    overlaps = page.evaluate(
        """() => {
            const hit = (a, b) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
            const clash = (list) => {
                const out = [];
                for (let i = 0; i < list.length; i++)
                    for (let j = i + 1; j < list.length; j++)
                        if (hit(list[i][1], list[j][1])) out.push([list[i][0], list[j][0]]);
                return out;
            };
            const drawn = aqGraph.nodes().filter(
                n => n.pstyle('font-size').pfValue * aqGraph.zoom() >= 7);
            return {
                bodies: clash(aqGraph.nodes().map(
                    n => [n.data('name'), n.boundingBox({includeLabels: false})])),
                labels: clash(drawn.map(n => [n.data('name'),
                    n.boundingBox({includeNodes: false, includeEdges: false})])),
                drawn: drawn.map(n => n.data('name')).sort(),
            };
        }"""
    )
    assert set(overlaps.pop("drawn")) == {f"HUB_{i:02d}" for i in range(20)} | {
        f"INGEST_{i:02d}" for i in range(5)
    }
    # The force-directed layout starts from random positions: no queue may sit on another, and
    # at most a couple of the 25 drawn labels may touch.
    assert overlaps["bodies"] == []
    assert len(overlaps["labels"]) <= 2, overlaps["labels"]

    # The filter shows a queue and its neighbours alone, laid out and zoomed to a readable size;
    # clearing it puts the whole graph back as it was.
    before = page.evaluate("() => aqGraph.nodes().map(n => [n.id(), n.position()])")
    page.get_by_label("Filter by queue name").fill("HUB_07")
    page.wait_for_function("() => aqGraph.nodes('.match').length === 1")
    shown = page.evaluate("() => aqGraph.nodes().not('.hidden').map(n => n.data('name')).sort()")
    assert "HUB_07" in shown and "INGEST_02" in shown and "INGEST_04" in shown
    assert "LEAF_007" in shown and "LEAF_000" in shown  # fed by HUB_00 and (second) HUB_07
    assert "HUB_08" not in shown and len(shown) < 25
    # Labels are drawn from 7 px on screen (min-zoomed-font-size); these are 8 px or more.
    assert page.evaluate("() => aqGraph.zoom()") * 11 >= 8
    assert "q=HUB_07" in page.url  # the filter is in the address, so it can be shared
    page.screenshot(path=str(artifact_path("topology-200-filtered")))
    page.get_by_label("Filter by queue name").fill("")
    page.wait_for_function("() => aqGraph.nodes('.hidden').length === 0")
    assert page.evaluate("() => aqGraph.nodes().map(n => [n.id(), n.position()])") == before
    assert "q=" not in page.url
    page_problems.assert_none()


# --- the list and detail pages ---------------------------------------------------------------


def test_the_list_and_detail_pages_update_live_and_their_buttons_work(
    page, live_server, login, admin_user, page_problems
):
    from jobs import services
    from jobs.models import PropagationSchedule

    qs = make_queues(admin_user, mc_table(admin_user), ["SRC", "DST", "OTHER"])
    p = propagate(admin_user, qs["SRC"], qs["DST"])
    propagate(admin_user, qs["SRC"], qs["OTHER"], schedule=False)

    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/propagations/")
    row = page.locator("#propagation-table tr[data-propagation=SRC_TO_DST]")
    expect(row.locator("[data-state]")).to_have_text("Idle")
    expect(
        page.locator("#propagation-table tr[data-propagation=SRC_TO_OTHER] [data-state]")
    ).to_have_text("Not scheduled")

    # A change made elsewhere (here: through the service) shows without a reload.
    page.evaluate("() => { window.aqNotReloaded = true; }")
    services.schedule_disable(user=admin_user, propagation=p)
    expect(row.locator("[data-state]")).to_have_text("Disabled", timeout=15_000)
    assert page.evaluate("() => window.aqNotReloaded === true")

    # The detail page: its buttons, their messages, and the live status part.
    row.get_by_role("link", name="SRC_TO_DST").click()
    page.wait_for_url(f"{live_server.url}/propagations/{p.pk}/")
    expect(page.locator("#propagation-state [data-state]")).to_have_text("Disabled")
    page.get_by_role("button", name="Enable schedule").click()
    expect(page.locator(".alert-success")).to_be_visible()
    expect(page.locator("#propagation-state [data-state]")).to_have_text("Idle")
    assert PropagationSchedule.objects.get(propagation=p).enabled
    page.get_by_role("button", name="Disable schedule").click()
    expect(page.locator(".alert-success")).to_be_visible()
    expect(page.locator("#propagation-state [data-state]")).to_have_text("Disabled")
    assert not PropagationSchedule.objects.get(propagation=p).enabled

    page.evaluate("() => { window.aqNotReloaded = true; }")
    services.schedule_enable(user=admin_user, propagation=p)
    expect(page.locator("#propagation-state [data-state]")).to_have_text("Idle", timeout=15_000)
    assert page.evaluate("() => window.aqNotReloaded === true")

    # From here, "Trace a message" starts at the propagation's source.
    page.get_by_role("link", name="Trace a message").click()
    expect(page.get_by_label("Start queue")).to_have_value(str(qs["SRC"].pk))
    page_problems.assert_none()


# --- trace a message ----------------------------------------------------------------------------


def hop_row(page: Any, propagation: str) -> Any:
    return page.locator(f"#trace-hops tr[data-propagation={propagation}]")


def test_trace_a_message_through_two_hops_shows_the_deciding_rules(
    page, live_server, login, admin_user, page_problems, settings
):
    from queues.models import Message
    from rules import services as rs

    # The first hop's rule stamps the message (a custom transformation): the trace shows the
    # step and the message as the next hop gets it.
    settings.AQ_TRANSFORMATIONS = {
        **settings.AQ_TRANSFORMATIONS,
        "EXPLODE_ON_POISON": "tests.jobs.transforms.explode_on_poison",
    }
    table = mc_table(admin_user)
    qs = make_queues(admin_user, table, ["A", "B", "C", "D"])
    eu = rule_set(admin_user, "EU", ":msg.region = 'EU'")
    rs.custom_transformation_set(user=admin_user, rule=eu.rules.get(), function="EXPLODE_ON_POISON")
    propagate(admin_user, qs["A"], qs["B"], name="A_B", positive_rule_set=eu)
    propagate(
        admin_user,
        qs["B"],
        qs["C"],
        name="B_C",
        negative_rule_set=rule_set(admin_user, "NO_SMALL", ":msg.amount < 10"),
    )
    propagate(
        admin_user,
        qs["A"],
        qs["D"],
        name="A_D",
        positive_rule_set=rule_set(admin_user, "US", ":msg.region = 'US'"),
    )
    [queued] = enqueue(qs["A"], [{"region": "EU", "amount": 50}])
    before = Message.objects.count()

    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/propagations/")
    page.get_by_role("link", name="Trace a message").click()
    page.get_by_label("Start queue").select_option(label="A")
    page.get_by_label("Message", exact=True).fill(
        json.dumps({"kind": "user", "payload": {"region": "EU", "amount": 5}})
    )
    page.get_by_role("button", name="Trace").click()

    ab, bc, ad = hop_row(page, "A_B"), hop_row(page, "B_C"), hop_row(page, "A_D")
    expect(ab.locator(".trace-decision")).to_have_text("PERFORM")
    expect(ab.locator(".trace-rule")).to_contain_text("EU_R0")
    expect(ab.locator(".trace-rule")).to_contain_text("in rule set EU")
    expect(ab.locator(".trace-steps")).to_contain_text("CUSTOM TRANSFORMATION")
    expect(ab.locator("pre")).to_contain_text('"stamped": true')
    expect(bc.locator(".trace-decision")).to_have_text("DISCARD")
    expect(bc.locator(".trace-rule")).to_contain_text("NO_SMALL_R0")
    expect(bc.locator(".trace-rule")).to_contain_text("in rule set NO_SMALL")
    expect(ad.locator(".trace-decision")).to_have_text("DISCARD")
    expect(ad.locator(".trace-rule")).to_contain_text("none")
    # The second hop is drawn inside the first.
    assert bc.get_attribute("data-depth") == "1" and ab.get_attribute("data-depth") == "0"
    indent = page.evaluate(
        "(rows) => rows.map(r => parseFloat(getComputedStyle(r.cells[0]).paddingLeft))",
        page.locator("#trace-hops tr.trace-hop").element_handles(),
    )
    assert indent[1] > indent[0]  # rows: A_B, B_C (under it), A_D
    expect(page.locator("#trace-reaches")).to_contain_text("B")
    expect(page.locator("#trace-reaches .badge")).to_have_count(1)
    page.screenshot(path=str(artifact_path("trace-two-hops")), full_page=True)

    # A queued message, picked by its id (its queue is the start): it goes on to C.
    page.goto(f"{live_server.url}/propagations/trace/?msgid={queued}")
    expect(hop_row(page, "B_C").locator(".trace-decision")).to_have_text("PERFORM")
    expect(page.locator("#trace-reaches .badge")).to_have_text(["B", "C"])
    expect(page.locator("#trace-message")).to_contain_text('"amount": 50')
    assert Message.objects.count() == before  # a dry run

    # A message the transformation fails on: EXCEPTION at the first hop, and it goes no further.
    page.goto(f"{live_server.url}/propagations/trace/?queue={qs['A'].pk}")
    expect(page.get_by_label("Start queue")).to_have_value(str(qs["A"].pk))
    page.get_by_label("Message", exact=True).fill(
        json.dumps({"kind": "user", "payload": {"region": "EU", "poison": True}})
    )
    page.get_by_role("button", name="Trace").click()
    expect(hop_row(page, "A_B").locator(".trace-decision")).to_have_text("EXCEPTION")
    expect(hop_row(page, "A_B")).to_contain_text("poisoned payload")
    expect(hop_row(page, "B_C")).to_have_count(0)
    expect(page.locator("#trace-reaches")).to_contain_text("no other queue")

    # Bad input: the error names the field, the page is a 400, never a 500.
    page.goto(f"{live_server.url}/propagations/trace/")
    page.get_by_label("Start queue").select_option(label="A")
    page.get_by_label("Message", exact=True).fill('{"kind": "user", "payload": ')
    with page.expect_response(lambda r: "/trace/" in r.url) as resp:
        page.get_by_role("button", name="Trace").click()
    assert resp.value.status == 400
    expect(page.locator("[data-field=message]")).to_be_visible()
    expect(page.locator("#trace-hops")).to_have_count(0)
    response = page.goto(
        f"{live_server.url}/propagations/trace/?queue=999999&message=%7B%22kind%22%3A%22user%22%7D"
    )
    assert response.status == 400
    expect(page.locator("[data-field=queue]")).to_be_visible()
    response = page.goto(f"{live_server.url}/propagations/trace/?msgid=999999")
    assert response.status == 400
    expect(page.locator("[data-field=msgid]")).to_contain_text("999999")
    page_problems.assert_none()


# --- screenshots for the docs ------------------------------------------------------------------


def save_docs_shot(page: Any, name: str, **kw: Any) -> Path:
    if os.environ.get("AQ_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        path = DOCS_IMG / f"{name}.png"
    else:
        path = artifact_path(name)
    page.screenshot(path=str(path), **kw)
    return path


def in_thread(call: Callable[[], Any]) -> threading.Thread:
    def target() -> None:
        try:
            call()
        finally:
            connection.close()

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


def test_docs_screenshots_show_a_topology_and_schedules_in_different_states(
    page, live_server, login, admin_user, page_problems, settings
):
    """An order-routing topology of 24 queues: runs moved messages (rates), one propagation keeps
    failing (backing off), one failed for good, one is disabled, one stopped, one waits for its
    window and one is not scheduled; one is running while the pictures are taken."""
    from jobs import services
    from jobs.selectors import propagation_get
    from queues import services as qsvc

    table = mc_table(admin_user)
    regions = ["EU", "US", "APAC"]
    names = ["ORDERS_IN", "ORDERS_ROUTER", "AUDIT"]
    for r in regions:
        names += [f"ORDERS_{r}", f"BILLING_{r}", f"SHIPPING_{r}", f"ERP_{r}", f"REPORTS_{r}"]
    names += ["ARCHIVE", "ALERTS", "DATA_LAKE", "PARTNER_FEED", "LEGACY_ERP", "NOBODY_LISTENS"]
    q = make_queues(admin_user, table, names)
    assert len(q) == 24
    # Queues that are only destinations get a local subscriber, so propagations can enqueue.
    for name in ["AUDIT", "ARCHIVE", "ALERTS", "DATA_LAKE", "LEGACY_ERP", "PARTNER_FEED"]:
        qsvc.subscriber_add(user=admin_user, queue=q[name], name="APP")
    for r in regions:
        for kind in ("SHIPPING", "ERP", "REPORTS"):
            qsvc.subscriber_add(user=admin_user, queue=q[f"{kind}_{r}"], name="APP")

    p = {}

    def prop(src: str, dst: str, **kw: Any) -> Any:
        p[(src, dst)] = propagate(admin_user, q[src], q[dst], **kw)
        return p[(src, dst)]

    prop("ORDERS_IN", "ORDERS_ROUTER")
    prop("ORDERS_IN", "AUDIT")
    for r in regions:
        prop(
            "ORDERS_ROUTER",
            f"ORDERS_{r}",
            positive_rule_set=rule_set(admin_user, f"REGION_{r}", f":msg.region = '{r}'"),
        )
        prop(f"ORDERS_{r}", f"BILLING_{r}")
        prop(f"ORDERS_{r}", f"SHIPPING_{r}")
        prop(f"BILLING_{r}", f"ERP_{r}")
        prop(f"BILLING_{r}", f"REPORTS_{r}")
    prop("ORDERS_ROUTER", "ARCHIVE")
    prop("AUDIT", "DATA_LAKE")
    prop("AUDIT", "ALERTS")
    waiting = prop("REPORTS_EU", "DATA_LAKE", start_time=timezone.now() + timedelta(hours=2))
    stopped = prop("REPORTS_US", "DATA_LAKE")
    unscheduled = prop("REPORTS_APAC", "DATA_LAKE", schedule=False)
    disabled = prop("ERP_EU", "LEGACY_ERP")
    backing_off = prop("SHIPPING_US", "NOBODY_LISTENS")
    failed = prop("SHIPPING_APAC", "PARTNER_FEED", max_failures=1)
    services.propagation_stop(user=admin_user, propagation=stopped)
    services.schedule_disable(user=admin_user, propagation=disabled)
    qsvc.queue_stop(user=admin_user, queue=q["PARTNER_FEED"], dequeue=False)

    # Real runs, in this process, push orders through the first hops: they leave real rates.
    enqueue(q["ORDERS_IN"], [{"region": regions[i % 3], "n": i} for i in range(240)])
    for key in [("ORDERS_IN", "ORDERS_ROUTER"), ("ORDERS_IN", "AUDIT")]:
        run_now(p[key])
    for r in regions:
        run_now(p[("ORDERS_ROUTER", f"ORDERS_{r}")])
        run_now(p[(f"ORDERS_{r}", f"BILLING_{r}")])
        run_now(p[(f"ORDERS_{r}", f"SHIPPING_{r}")])
    run_now(p[("ORDERS_ROUTER", "ARCHIVE")])
    run_now(p[("AUDIT", "DATA_LAKE")])
    run_now(backing_off)
    run_now(failed)

    # One propagation is running while the pictures are taken: a long backlog, a batch at a time.
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "BATCH": 5, "SLICE_S": 120}
    enqueue(q["AUDIT"], [{"n": i} for i in range(6000)])
    running = p[("AUDIT", "ALERTS")]
    worker = in_thread(lambda: run_now(running))
    try:
        states = {
            pr.name: propagation_get(pr.pk).state
            for pr in (waiting, stopped, unscheduled, disabled, backing_off, failed)
        }
        assert states == {
            waiting.name: "waiting",
            stopped.name: "stopped",
            unscheduled.name: "unscheduled",
            disabled.name: "disabled",
            backing_off.name: "backing_off",
            failed.name: "failed",
        }
        deadline = time.monotonic() + 20
        while propagation_get(running.pk).state != "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert propagation_get(running.pk).state == "running"

        login(page, "alice", "pw-alice")
        page.set_viewport_size({"width": 1500, "height": 950})
        open_graph(page, f"{live_server.url}/propagations/topology/", 24)
        g = graph(page)
        assert g["edges"][failed.name]["colour"] == RED
        assert g["edges"][running.name]["colour"] == GREEN
        assert float(g["edges"]["ORDERS_IN_TO_ORDERS_ROUTER"]["label"].split("/")[0]) > 0
        assert page.evaluate("() => aqGraph.zoom()") * 11 >= 8  # every label drawn
        shot = save_docs_shot(page, "topology")
        assert shot.stat().st_size > 20_000

        page.goto(f"{live_server.url}/propagations/?sort=name&per_page=50")
        expect(page.locator("#propagation-table tbody tr")).to_have_count(len(p))
        for pr, label in [(failed, "Failed"), (running, "Running"), (backing_off, "Backing off")]:
            row = page.locator(f"#propagation-table tr[data-propagation={pr.name}]")
            expect(row.locator("[data-state]")).to_have_text(label)
        save_docs_shot(page, "propagation-schedules", full_page=True)
    finally:
        services.schedule_disable(user=admin_user, propagation=running)  # ends its window
        worker.join(timeout=30)
    assert not worker.is_alive()
    page_problems.assert_none()
