"""The topology graph in Debian's chromium with a database link: this site and the linked site
are drawn as groups around their queues, the propagation to QUEUE@LINK and the linked site's
propagation back here are flagged as a cycle, the list under the graph says so, and neither the
first drawing nor a refresh raises a script error."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.helpers import shot
from tests.sites.helpers import SITE_B
from tests.sites.remote_queues import remote_hub

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_graph_draws_site_groups_and_the_cycle(
    page, live_server, login, admin_user, site, page_problems
):
    from jobs import services as js
    from queues import services as qs
    from sites import services as ss

    remote_hub(site, settings.AQ_GLOBAL_NAME)
    ss.database_link_create(user=admin_user, name="SITE_B", **site.link_fields())
    qt = qs.queue_table_create(
        user=admin_user, name="QT_MC", sort_order="enq_time", multiple_consumers=True
    )
    src = qs.queue_create(user=admin_user, name="SRC", queue_table=qt)
    js.propagation_create(
        user=admin_user, name="SRC_TO_B", source_queue=src, destination_queue="B_HUB@SITE_B"
    )
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)

    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/propagations/topology/")
    page.wait_for_function("() => window.aqGraph && window.aqGraph.nodes(':parent').length === 2")
    drawn = page.evaluate(
        """() => ({
            groups: Object.fromEntries(aqGraph.nodes(':parent').map(g => [g.data('name'),
                g.children().map(c => c.data('name')).sort()])),
            labels: aqGraph.nodes(':parent').map(g => g.style('label')).sort(),
            cycle: aqGraph.edges('[?cycle]').map(e => e.data('name')).sort(),
            visible: aqGraph.nodes(':parent').every(g => g.renderedWidth() > 20),
        })"""
    )
    local = settings.AQ_GLOBAL_NAME
    assert drawn["groups"][local] == ["SRC"]
    assert drawn["groups"][SITE_B] == ["B_HUB@SITE_B", "B_LOCAL@SITE_B"]
    assert drawn["labels"] == sorted([f"{local} (this site)", SITE_B])
    assert drawn["cycle"] == ["B_HUB_TO_A", "SRC_TO_B"]
    assert drawn["visible"]
    expect(page.locator(f"#topology-sites [data-site='{SITE_B}']")).to_have_attribute(
        "data-reachable", "yes"
    )
    expect(page.locator("#topology-cycles")).to_contain_text("across sites")
    shot(page, "topology_sites")

    # A refresh updates the groups in place without an error.
    page.wait_for_function("() => window.aqGraphRefreshes >= 1", timeout=20_000)
    assert page.evaluate("() => aqGraph.nodes(':parent').length") == 2
    page_problems.assert_none()
    assert not console_errors, console_errors
