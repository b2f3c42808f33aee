"""The navigation bar's menus mark the page at hand, pages deep inside a section included: its
menu's title and, inside the menu, its link (aria-current="page"); one of each, never more."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

MARKED_MENU = re.compile(r'<summary class="nav-link dropdown-toggle active">([^<]+)</summary>')
MARKED_LINK = re.compile(
    r'<a class="dropdown-item active" href="[^"]*" aria-current="page">([^<]+)</a>'
)


def marks(html: str) -> tuple[list[str], list[str]]:
    return MARKED_MENU.findall(html), MARKED_LINK.findall(html)


@pytest.mark.parametrize(
    ("url_name", "menu", "link"),
    [
        ("queues:set_up_queue", "Queues", "Queues"),
        ("queues:ownership_log", "Queues", "Queue tables"),
        ("queues:agent_add", "Queues", "Agents"),
        ("parallel:logicalqueue_list", "Queues", "Parallel queues"),
        ("rules:ruleset_list", "Rules", "Rule sets"),
        ("rules:context_list", "Rules", "Contexts"),
        ("jobs:topology", "Propagation", "Propagations"),
        ("jobs:run_list", "Propagation", "Propagations"),
        ("jobs:worker_list", "Propagation", "Workers"),
        ("spark:job_list", "Propagation", "Spark jobs"),
        ("sites:link_list", "Propagation", "Database links"),
        ("gateway_home", "Gateway", "Gateway"),
        ("gateway:link_list", "Gateway", "Gateway links"),
        ("gateway:foreignqueue_list", "Gateway", "Foreign queues"),
        ("status_views_alias", "Status", "Status views"),
        ("instances:instance_list", "Status", "Instances"),
        ("definitions:page", "Admin", "Definitions"),
    ],
)
def test_a_page_marks_its_menu_and_its_link(admin_client, url_name, menu, link):
    response = admin_client.get(reverse(url_name))

    assert response.status_code == 200
    assert marks(response.content.decode()) == ([menu], [link])


def test_the_dashboard_marks_no_menu(admin_client):
    assert marks(admin_client.get("/").content.decode()) == ([], [])


def test_only_staff_get_the_django_admin_link(admin_client, admin_user):
    assert "Django admin" not in admin_client.get("/").content.decode()

    admin_user.is_staff = True
    admin_user.save()
    html = admin_client.get("/").content.decode()
    assert f'href="{reverse("admin:index")}">Django admin</a>' in html


def test_the_database_links_entry_opens_a_page_of_that_name(admin_client, admin_user):
    """The bar once said "Sites" for a page titled "Database links" (Oracle's term): the bar's
    link, the list's title and heading and a link's own page all say database link(s)."""
    from sites.models import DatabaseLink

    html = admin_client.get(reverse("sites:link_list")).content.decode()
    assert marks(html) == (["Propagation"], ["Database links"])
    assert re.search(r"<title>Database links ·", html)
    assert re.search(r"<h1[^>]*>\s*Database links\s*<", html)
    # A link's own page (a row written here: its page is read-only, no remote is asked).
    link = DatabaseLink.objects.create(
        name="SITE_B", host="127.0.0.1", database="b", username="u", remote_global_name="B"
    )
    html = admin_client.get(link.get_absolute_url()).content.decode()
    assert marks(html) == (["Propagation"], ["Database links"])
    assert re.search(r"<title>Database link SITE_B ·", html)
    assert re.search(r"<h1[^>]*>\s*Database link <span", html)
