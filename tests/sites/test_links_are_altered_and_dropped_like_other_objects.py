"""ALTER asks the remote again when the connection changes (a refusal changes nothing) and
keeps the site's new name; DROP is refused while something registered in sites.hooks uses the
link, and so is pointing a used link at another site. Each write is in the change log; roles
apply as for other topology objects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core import crypto
from core.models import ChangeLogEntry
from sites import hooks
from sites.models import DatabaseLink
from tests.sites.helpers import SITE_B, SITE_C, SITE_PASSWORD


@pytest.fixture
def used_links() -> Iterator[set[str]]:
    """Names of links a (test) propagation uses, through the hook the propagations will fill."""
    names: set[str] = set()
    hooks.register_link_users("test", lambda link: ["propagation P1"] if link.name in names else [])
    yield names
    hooks.unregister_link_users("test")


def test_altering_the_database_reads_the_new_sites_name(admin_api, make_link):
    link = make_link("SITE_B")

    response = admin_api.patch(f"/api/db-links/{link.pk}/", {"database": "site_c"})

    assert response.status_code == 200, response.json()
    assert response.json()["remote_global_name"] == SITE_C
    assert ChangeLogEntry.objects.filter(
        object_type="sites.databaselink", action="update", object_id=str(link.pk)
    ).exists()


def test_a_refused_alter_changes_nothing(admin_api, make_link):
    link = make_link("SITE_B")

    response = admin_api.patch(f"/api/db-links/{link.pk}/", {"password": "wrong"})

    assert response.status_code == 400 and "password" in response.json()
    link.refresh_from_db()
    assert crypto.decrypt(link.password_encrypted) == SITE_PASSWORD
    assert not ChangeLogEntry.objects.filter(action="update").exists()


def test_a_comment_alone_does_not_ask_the_remote(admin_api, make_link, site):
    link = make_link("SITE_B")
    with site.admin() as conn:  # the site away would refuse any connection
        conn.execute("ALTER DATABASE site_b ALLOW_CONNECTIONS false")
    try:
        response = admin_api.patch(f"/api/db-links/{link.pk}/", {"comment": "primary"})
    finally:
        with site.admin() as conn:
            conn.execute("ALTER DATABASE site_b ALLOW_CONNECTIONS true")

    assert response.status_code == 200 and response.json()["comment"] == "primary"


def test_dropping_a_link_logs_it(admin_api, make_link):
    link = make_link("SITE_B")

    assert admin_api.delete("/api/db-links/SITE_B/").status_code == 204

    assert not DatabaseLink.objects.exists()
    entry = ChangeLogEntry.objects.get(action="delete", object_type="sites.databaselink")
    assert entry.object_id == str(link.pk) and entry.before["password_encrypted"] == crypto.MASK


def test_dropping_a_link_in_use_is_refused(admin_api, admin_client, make_link, used_links):
    link = make_link("SITE_B")
    used_links.add("SITE_B")

    response = admin_api.delete("/api/db-links/SITE_B/")
    page = admin_client.post(f"/sites/links/{link.pk}/delete/", follow=True)

    assert response.status_code == 409 and "propagation P1" in response.json()["detail"]
    assert "propagation P1" in page.content.decode()
    assert DatabaseLink.objects.filter(pk=link.pk).exists()


def test_pointing_a_used_link_at_another_site_is_refused(admin_api, make_link, used_links):
    link = make_link("SITE_B")
    used_links.add("SITE_B")

    response = admin_api.patch(f"/api/db-links/{link.pk}/", {"database": "site_c"})

    assert response.status_code == 409 and SITE_C in response.json()["host"][0]
    link.refresh_from_db()
    assert (link.database, link.remote_global_name) == ("site_b", SITE_B)


def test_roles_apply_as_for_other_topology_objects(operator_api, monitor_api, make_link, site):
    make_link("SITE_B")
    data = {"name": "OTHER", **site.link_fields()}

    assert monitor_api.get("/api/db-links/").status_code == 200
    assert monitor_api.post("/api/db-links/", data).status_code == 403
    assert operator_api.post("/api/db-links/", data).status_code == 403
    assert operator_api.delete("/api/db-links/SITE_B/").status_code == 403
    assert operator_api.patch("/api/db-links/SITE_B/", {"comment": "x"}).status_code == 403
    assert DatabaseLink.objects.count() == 1
