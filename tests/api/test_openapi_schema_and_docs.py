"""The OpenAPI schema describes the application endpoints; the docs page needs no internet."""

from __future__ import annotations

import re

import yaml
from django.contrib.staticfiles import finders


def test_the_schema_is_served_and_lists_enqueue_and_dequeue(client, monitor_user):
    client.force_login(monitor_user)

    response = client.get("/api/schema/")

    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = schema["paths"]
    for action in ("enqueue", "dequeue", "ack", "release", "purge", "replay", "start", "stop"):
        assert "post" in paths[f"/api/queues/{{id}}/{action}/"], action
    assert "/api/changelog/" in paths
    assert "/api/status/dba_queues/" in paths


def test_the_schema_documents_the_enqueue_body(client, monitor_user):
    client.force_login(monitor_user)

    schema = yaml.safe_load(client.get("/api/schema/").content)

    body = schema["paths"]["/api/queues/{id}/enqueue/"]["post"]["requestBody"]
    ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "messages" in schema["components"]["schemas"][ref]["properties"]


def test_the_docs_page_renders_with_no_external_url(client, monitor_user):
    client.force_login(monitor_user)

    response = client.get("/api/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger" in html.lower()
    external = [
        url
        for url in re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", html)
        if url.startswith(("http://", "https://", "//"))
    ]
    assert external == []
    assert not re.search(r"https?://", html)
    assert "cdn" not in html.lower()


def test_the_docs_assets_are_served_locally(client, monitor_user):
    client.force_login(monitor_user)
    html = client.get("/api/docs/").content.decode()

    scripts = re.findall(r"""<script[^>]+src\s*=\s*["']([^"']+)""", html)

    assert scripts, html
    assert all(src.startswith("/static/") for src in scripts), scripts
    for src in scripts:
        assert finders.find(src.removeprefix("/static/")), f"{src} is not shipped with the project"


def test_the_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "schema.yaml"

    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))

    assert "/api/queues/{id}/dequeue/" in out.read_text()
