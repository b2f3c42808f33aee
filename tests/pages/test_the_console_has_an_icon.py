"""The icon: pages link it, and /favicon.ico (asked for by browsers and tools whatever the page
says) leads to it instead of a 404, without a login."""

from __future__ import annotations

from django.test import Client


def test_favicon_ico_leads_to_the_icon_without_a_login(db):
    answer = Client().get("/favicon.ico")
    assert answer.status_code == 301
    assert answer["Location"].endswith("/console/favicon.svg")


def test_pages_link_the_icon(db):
    login = Client().get("/login/")
    assert b'rel="icon"' in login.content and b"console/favicon.svg" in login.content
