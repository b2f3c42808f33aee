"""The definitions page in Debian's chromium: an administrator downloads the export, uploads a
changed copy, sees what it would change, and applies it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_export_then_import_a_changed_document_from_the_page(
    page, live_server, login, admin_user, queue, tmp_path, page_problems
):
    from queues.models import Queue

    login(page, "alice", "pw-alice")
    nav(page, "Admin", "Definitions")
    with page.expect_download() as download:
        page.locator("#export-encrypted").click()
    doc = json.loads(Path(download.value.path()).read_text())
    assert [q["name"] for q in doc["queues"]] == ["AQ$_QT_ORDERS_E", "ORDERS"]
    doc["queues"][1]["comment"] = "Changed by an import."
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(doc))

    page.locator("#id_file").set_input_files(str(changed))
    page.get_by_role("button", name="Show the changes").click()
    row = page.locator("#plan tr.plan-change")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("ORDERS")
    expect(row).to_contain_text("comment")
    expect(row).to_contain_text("Changed by an import.")
    assert Queue.objects.get(name="ORDERS").comment == ""
    shot(page, "definitions_plan")

    page.get_by_role("button", name="Apply these changes").click()
    expect(page.locator(".alert-success")).to_contain_text("Imported: 0 create, 1 change")
    assert Queue.objects.get(name="ORDERS").comment == "Changed by an import."

    # A file that is not a definitions document: the reason, with its path, and no change.
    changed.write_text(json.dumps({**doc, "format": "rabbitmq"}))
    page.locator("#id_file").set_input_files(str(changed))
    page.get_by_role("button", name="Show the changes").click()
    expect(page.locator("#import-error")).to_contain_text("format")
    page_problems.assert_none()
