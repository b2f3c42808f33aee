"""Trace a message across a database link: the hop to QUEUE@LINK is decided here, then the
trace goes on at the link's site with that site's propagations and rule sets (read through the
link, evaluated by this engine); a hop back to this site is a loop and stops there; a site that
cannot be reached says so at its hop. Nothing is enqueued anywhere."""

from __future__ import annotations

import socket

import pytest
from django.conf import settings

from jobs import selectors, services
from rules.lang import message_from_json
from sites.models import DatabaseLink
from tests.sites.helpers import SITE_B
from tests.sites.remote_queues import remote_hub

pytestmark = pytest.mark.django_db


@pytest.fixture
def src(site, make_link, admin_user, mc_table, make_queue):
    remote_hub(site, settings.AQ_GLOBAL_NAME)
    make_link("SITE_B")
    src = make_queue("SRC", mc_table)
    services.propagation_create(
        user=admin_user, name="SRC_TO_B", source_queue=src, destination_queue="B_HUB@SITE_B"
    )
    return src


def _hops(src, payload: dict) -> tuple[dict, dict]:
    out = selectors.trace(
        queue=src, message=message_from_json({"kind": "user", "payload": payload})
    )
    return out, {h["propagation"]: h for h in out["hops"]}


def _remote_messages(site) -> int:
    with site.admin("site_b") as conn:
        return conn.execute("SELECT count(*) FROM aq_message").fetchone()[0]


def test_the_trace_goes_on_at_the_remote_site_with_its_rule_sets(src, site):
    before = _remote_messages(site)  # other tests of the session may have sent some there

    out, hops = _hops(src, {"region": "EU"})

    assert hops["SRC_TO_B"]["decision"] == "PERFORM"
    assert hops["SRC_TO_B"]["destination"] == "B_HUB@SITE_B"
    assert hops["SRC_TO_B"]["site"] == SITE_B
    at_b = hops["B_HUB_TO_LOCAL"]
    assert (at_b["depth"], at_b["at_site"], at_b["decision"]) == (1, SITE_B, "PERFORM")
    assert at_b["rule"] == "B_ONLY_EU_R0" and at_b["rule_set"] == "B_ONLY_EU"
    assert "B_LOCAL@SITE_B" in out["reaches"]
    assert _remote_messages(site) == before  # a dry run: nothing enqueued at B

    _, hops = _hops(src, {"region": "US"})
    assert hops["B_HUB_TO_LOCAL"]["decision"] == "DISCARD"


def test_a_hop_back_to_this_site_is_a_loop_and_stops(src):
    out, hops = _hops(src, {"region": "EU"})

    back = hops["B_HUB_TO_A"]
    assert back["decision"] == "PERFORM" and back["loop"] is True
    assert back["site"] == settings.AQ_GLOBAL_NAME
    # Stopped there: SRC_TO_B is traced once, not again from SRC.
    assert [h["propagation"] for h in out["hops"]].count("SRC_TO_B") == 1


def test_an_unreachable_site_is_said_at_its_hop(src):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    DatabaseLink.objects.filter(name="SITE_B").update(port=port)

    _, hops = _hops(src, {"region": "EU"})

    assert "cannot be reached" in hops["SRC_TO_B"]["unreachable"]
    assert list(hops) == ["SRC_TO_B"]


def test_the_trace_page_shows_the_remote_hops(admin_client, src):
    response = admin_client.get(
        "/propagations/trace/",
        {"queue": src.pk, "message": '{"kind": "user", "payload": {"region": "EU"}}'},
    )
    assert response.status_code == 200, response.content[-2000:]
    text = response.content.decode()
    assert "B_HUB_TO_LOCAL" in text and "trace-loop" in text and SITE_B in text


def test_the_trace_api_shows_the_remote_hops(admin_api, src):
    response = admin_api.post(
        "/api/trace/",
        {"queue": "SRC", "message": {"kind": "user", "payload": {"region": "EU"}}},
        format="json",
    )
    assert response.status_code == 200, response.content
    names = [h["propagation"] for h in response.json()["hops"]]
    assert names[0] == "SRC_TO_B" and "B_HUB_TO_A" in names
