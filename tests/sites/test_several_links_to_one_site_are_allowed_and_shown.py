"""Two links to one site (the same global name) are allowed, as Oracle allows several links to
one database (another user there, other grants); each link's page and API entry names the
others, and a propagation may not go from one source to one queue there through both (it would
deliver every message twice): 409 naming destination_queue, nothing written."""

from __future__ import annotations

import pytest

from jobs.models import Propagation
from tests.sites.helpers import SITE_B
from tests.sites.remote_queues import remote_queues

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_links(site, make_link):
    remote_queues(site)
    return make_link("SITE_B"), make_link("SITE_B_AGAIN")


def test_a_second_link_to_the_same_site_is_created_and_names_the_first(admin_api, site, two_links):
    response = admin_api.post(
        "/api/db-links/", {"name": "THIRD", **site.link_fields()}, format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["remote_global_name"] == SITE_B
    assert body["same_site_links"] == ["SITE_B", "SITE_B_AGAIN"]
    listed = {r["name"]: r for r in admin_api.get("/api/db-links/").json()["results"]}
    assert listed["SITE_B"]["same_site_links"] == ["SITE_B_AGAIN", "THIRD"]


def test_the_link_page_warns_of_the_other_links(admin_client, two_links):
    response = admin_client.get(two_links[0].get_absolute_url())
    text = response.content.decode()
    assert 'id="link-same-site"' in text and "SITE_B_AGAIN" in text


def test_a_link_to_a_site_of_its_own_shows_no_warning(admin_client, site, make_link):
    link = make_link("ONLY_ONE", database="site_c")
    text = admin_client.get(link.get_absolute_url()).content.decode()
    assert 'id="link-same-site"' not in text


def test_one_source_to_one_remote_queue_through_two_links_is_refused(
    admin_api, two_links, mc_table, make_queue
):
    make_queue("SRC", mc_table)
    first = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B", "source_queue": "SRC", "destination_queue": "REMOTE_IN@SITE_B"},
    )
    assert first.status_code == 201, first.content
    before = list(Propagation.objects.values_list("name", flat=True))

    again = admin_api.post(
        "/api/propagations/",
        {"name": "TO_B2", "source_queue": "SRC", "destination_queue": "REMOTE_IN@SITE_B_AGAIN"},
    )

    assert again.status_code == 409, again.content
    error = str(again.json()["destination_queue"])
    assert "TO_B" in error and SITE_B in error
    assert list(Propagation.objects.values_list("name", flat=True)) == before
