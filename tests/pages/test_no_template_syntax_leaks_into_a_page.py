"""No template comment or tag shows as text: Django's ``{# #}`` comment is one line only, and a
two-line one printed itself above every list's filter form."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/queues/",
    "/queues/tables/",
    "/queues/agents/",
    "/queues/privileges/",
    "/queues/parallel/",
    "/rules/",
    "/rules/sets/",
    "/rules/contexts/",
    "/propagations/",
    "/propagations/topology/",
    "/spark/",
    "/spark/new/",
    "/sites/",
    "/instances/",
    "/gateway/agents/",
    "/gateway/links/",
    "/gateway/foreign-queues/",
    "/gateway/jobs/",
    "/status/",
    "/definitions/",
]


@pytest.mark.parametrize("path", PAGES)
def test_a_page_shows_no_template_syntax(admin_client, role_groups, path):
    response = admin_client.get(path)

    assert response.status_code == 200, path
    body = response.content.decode()
    for mark in ("{#", "#}", "{%", "%}", "{{", "}}"):
        assert mark not in body, (path, mark, body[max(0, body.find(mark) - 200) :][:400])
