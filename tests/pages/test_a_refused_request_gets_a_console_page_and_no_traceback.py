"""Issue 16: a refused POST (a role without the capability, or a missing CSRF token) got a bare
"403 Forbidden" page and a traceback in web.log. It gets the console's page saying why and what
to do, and the log says Forbidden in one line, without a traceback."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_a_role_refusal_is_a_console_page_without_a_traceback(monitor_client, queue, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = monitor_client.post(f"/queues/{queue.pk}/purge/", {"states": "READY"})
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="navbar-brand"' in html  # the console's layout
    assert "Your role does not allow this." in html
    assert "ask an administrator" in html
    assert [r.exc_info for r in caplog.records if r.name == "django.request"] == [None]


def test_a_missing_csrf_token_is_a_console_page(admin_user, queue):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post(f"/queues/{queue.pk}/purge/", {"states": "READY"})
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="navbar-brand"' in html
    assert "CSRF" in html and "Reload the page" in html
