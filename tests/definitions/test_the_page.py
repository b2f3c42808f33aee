"""The definitions page without a browser: export download, upload, the changes shown, apply
(tests/browser/test_definitions_page.py drives the same steps in chromium)."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from queues.models import Queue

pytestmark = pytest.mark.django_db


def test_upload_shows_the_changes_and_apply_makes_them(admin_client, queue):
    r = admin_client.get("/definitions/export/?secrets=omit")
    assert r.status_code == 200
    assert r["Content-Disposition"] == 'attachment; filename="definitions.json"'
    doc = json.loads(r.content)
    doc["queues"][1]["max_retries"] = 7
    upload = SimpleUploadedFile("d.json", json.dumps(doc).encode(), "application/json")

    r = admin_client.post("/definitions/", {"file": upload, "step": "preview"})

    assert r.status_code == 200
    plan = r.context["plan"]
    assert [(c.action, c.name, c.fields) for c in plan.changes] == [
        ("change", "ORDERS", {"max_retries": {"from": 5, "to": 7}})
    ]
    assert Queue.objects.get(name="ORDERS").max_retries == 5
    assert b'id="apply-form"' in r.content

    # Step two sends back the document the page holds, as the browser does.
    held = re.search(r'name="document" value="([^"]*)"', r.content.decode()).group(1)
    r = admin_client.post("/definitions/", {"document": html.unescape(held), "step": "apply"})

    assert r.context["plan"].applied
    assert b"Imported: 0 create, 1 change, 0 delete." in r.content
    assert Queue.objects.get(name="ORDERS").max_retries == 7


def test_a_bad_upload_shows_the_path_and_changes_nothing(admin_client, queue):
    doc = json.loads(admin_client.get("/definitions/export/").content)
    doc["queues"][1]["queue_table"] = "ELSEWHERE"
    upload = SimpleUploadedFile("d.json", json.dumps(doc).encode(), "application/json")

    r = admin_client.post("/definitions/", {"file": upload, "step": "apply"})

    assert r.context["error"].field == "queues[1].queue_table"
    assert b"queues[1].queue_table" in r.content
    assert Queue.objects.get(name="ORDERS").queue_table.name == "QT_ORDERS"
    not_json = SimpleUploadedFile("d.json", b"{not json", "application/json")
    r = admin_client.post("/definitions/", {"file": not_json})
    assert "Not a JSON document" in r.context["form"].errors["file"][0]


def test_the_page_is_for_administrators(monitor_client):
    assert monitor_client.get("/definitions/").status_code == 403
    assert monitor_client.get("/definitions/export/").status_code == 403
