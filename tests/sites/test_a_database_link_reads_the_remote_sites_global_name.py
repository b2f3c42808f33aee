"""Creating a database link asks the remote: the link keeps the site's global name, its
password is stored encrypted, the change log records it, and DBA_DB_LINKS shows it."""

from __future__ import annotations

from core import crypto
from core.models import ChangeLogEntry
from sites.models import DatabaseLink
from tests.sites.helpers import SITE_B, SITE_PASSWORD, SITE_USER


def test_a_link_created_through_the_api_reads_the_global_name(admin_api, site):
    response = admin_api.post("/api/db-links/", {"name": "site_b", **site.link_fields()})

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["name"], body["remote_global_name"], body["owner"]) == ("SITE_B", SITE_B, "alice")
    assert body["password"] == crypto.MASK
    link = DatabaseLink.objects.get(name="SITE_B")
    assert link.password_encrypted != SITE_PASSWORD
    assert crypto.decrypt(link.password_encrypted) == SITE_PASSWORD
    entry = ChangeLogEntry.objects.get(object_type="sites.databaselink", action="create")
    assert entry.after["password_encrypted"] == crypto.MASK


def test_dba_db_links_shows_the_link_under_oracles_column_names(monitor_api, make_link, site):
    make_link("SITE_B")

    [row] = monitor_api.get("/api/status/dba_db_links/").json()["results"]

    assert row == {
        "owner": "alice",
        "db_link": "SITE_B",
        "username": SITE_USER,
        "host": f"127.0.0.1:{site.port}/site_b",
        "created": row["created"],
    }
    assert row["created"]


def test_a_link_made_without_a_user_is_public_in_dba_db_links(monitor_api, site):
    from sites import services

    services.database_link_create(user=None, name="SYS_LINK", **site.link_fields())

    [row] = monitor_api.get("/api/status/dba_db_links/").json()["results"]
    assert (row["owner"], row["db_link"]) == ("PUBLIC", "SYS_LINK")


def test_the_status_page_has_a_dba_db_links_tab(monitor_client, make_link):
    make_link("SITE_B")

    html = monitor_client.get("/status/?view=dba_db_links").content.decode()

    assert "DB_LINK" in html and "SITE_B" in html and "USERNAME" in html
