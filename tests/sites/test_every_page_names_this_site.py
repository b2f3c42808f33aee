"""This database's global name: the setting, shown in every page's header, copied by migrate
into aq_site, and served as the GLOBAL_NAME status view for other sites and the API."""

from __future__ import annotations

from django.conf import settings

from sites.models import LocalSite
from sites.services import local_site_sync


def test_pages_show_the_global_name_in_the_header(monitor_client):
    for url in ("/", "/queues/", "/sites/", "/status/"):
        html = monitor_client.get(url).content.decode()
        name = settings.AQ_GLOBAL_NAME
        # The badge shows the name (cut with an ellipsis when long) and its title holds it whole.
        assert f'id="global-name" title="GLOBAL_NAME of this database: {name}">{name}<' in html, url


def test_the_global_name_view_answers_with_the_setting(monitor_api):
    [row] = monitor_api.get("/api/status/global_name/").json()["results"]

    assert row == {"global_name": settings.AQ_GLOBAL_NAME}


def test_migrate_writes_a_changed_setting_into_aq_site(settings, monitor_api):
    settings.AQ_GLOBAL_NAME = "RENAMED.EXAMPLE.COM"

    local_site_sync()

    assert LocalSite.objects.get().global_name == "RENAMED.EXAMPLE.COM"
    [row] = monitor_api.get("/api/status/global_name/").json()["results"]
    assert row["global_name"] == "RENAMED.EXAMPLE.COM"
