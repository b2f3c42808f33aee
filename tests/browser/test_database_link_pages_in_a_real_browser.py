"""The database link pages in Debian's chromium: the header names this site; an administrator
creates a link to the private second PostgreSQL (a wrong password first: the reason shows next
to the password), tests its connection (the site's name shows in place) and drops it."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.helpers import nav, shot
from tests.sites.helpers import SITE_B, SITE_PASSWORD, SITE_USER

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_database_link_from_the_pages(page, live_server, login, admin_user, site, page_problems):
    from sites.models import DatabaseLink

    login(page, "alice", "pw-alice")
    expect(page.locator("#global-name")).to_have_text(settings.AQ_GLOBAL_NAME)
    # The bar holds every section, the global name and the user without spilling out of the
    # page on a 1280-pixel screen (it wraps its links instead).
    page.set_viewport_size({"width": 1280, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    nav(page, "Propagation", "Database links")
    page.get_by_role("link", name="Add", exact=True).click()
    page.get_by_label("Name", exact=True).fill("SITE_B")
    page.get_by_label("Host", exact=True).fill("127.0.0.1")
    page.get_by_label("Port", exact=True).fill(str(site.port))
    page.get_by_label("Database", exact=True).fill("site_b")
    page.get_by_label("Username", exact=True).fill(SITE_USER)
    page.get_by_label("Password", exact=True).fill("not-the-password")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("[data-field='password']")).to_contain_text("password authentication")
    assert not DatabaseLink.objects.exists()

    page.get_by_label("Password", exact=True).fill(SITE_PASSWORD)
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#link-name")).to_have_text("SITE_B")
    expect(page.locator("#link-site")).to_have_text(SITE_B)
    expect(page.locator("#link-password")).to_have_text("<<ENCRYPTED>>")
    assert SITE_PASSWORD not in page.content()

    page.locator("#test-connection").click()
    expect(page.locator("[data-test-result='ok']")).to_contain_text(SITE_B)
    shot(page, "sites_link_detail")

    page.get_by_role("link", name="Drop").click()
    page.get_by_role("button", name="Drop database link").click()
    expect(page.locator("[data-link]")).to_have_count(0)
    assert not DatabaseLink.objects.exists()
    page_problems.assert_none()
