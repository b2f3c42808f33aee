"""Test connection asks the site again: ok with its global name, or the remote's reason (a
password changed there, a site that now answers with another name). Operators may test,
monitors may not; the link page's button gets the answer in place (HTMX)."""

from __future__ import annotations

from tests.sites.helpers import SITE_B, SITE_C, SITE_PASSWORD, SITE_USER


def test_a_reachable_site_is_ok_with_its_global_name(operator_api, make_link):
    make_link("SITE_B")

    response = operator_api.post("/api/db-links/SITE_B/test-connection/")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and SITE_B in body["detail"] and "PostgreSQL 16" in body["detail"]


def test_a_password_changed_at_the_site_fails_naming_the_password(operator_api, make_link, site):
    make_link("SITE_B")
    with site.admin() as conn:
        conn.execute(f"ALTER ROLE {SITE_USER} PASSWORD 'changed-there'")
    try:
        body = operator_api.post("/api/db-links/SITE_B/test-connection/").json()
    finally:
        with site.admin() as conn:
            conn.execute(f"ALTER ROLE {SITE_USER} PASSWORD '{SITE_PASSWORD}'")

    assert body["ok"] is False
    assert body["detail"].startswith("password:") and "password authentication" in body["detail"]


def test_a_site_answering_with_another_name_fails(operator_api, make_link, site):
    link = make_link("SITE_B")
    with site.admin("site_b") as conn:
        conn.execute("UPDATE aq_site SET global_name = %s", [SITE_C])
    try:
        body = operator_api.post(f"/api/db-links/{link.pk}/test-connection/").json()
    finally:
        with site.admin("site_b") as conn:
            conn.execute("UPDATE aq_site SET global_name = %s", [SITE_B])

    assert body["ok"] is False and SITE_C in body["detail"] and SITE_B in body["detail"]


def test_a_monitor_may_not_test(monitor_api, make_link):
    make_link("SITE_B")

    assert monitor_api.post("/api/db-links/SITE_B/test-connection/").status_code == 403


def test_the_link_pages_button_answers_in_place(operator_client, make_link):
    link = make_link("SITE_B")

    page = operator_client.get(f"/sites/links/{link.pk}/").content.decode()
    fragment = operator_client.post(f"/sites/links/{link.pk}/test/", HTTP_HX_REQUEST="true")

    assert 'id="test-connection"' in page
    html = fragment.content.decode()
    assert 'data-test-result="ok"' in html and SITE_B in html and "<nav" not in html
