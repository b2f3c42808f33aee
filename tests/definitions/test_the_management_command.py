"""``manage.py definitions export|import [--dry-run] [--prune] FILE``."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from definitions.selectors import definitions_export
from queues.models import Queue

pytestmark = pytest.mark.django_db


def test_export_then_a_dry_run_then_the_import(demo_document, tmp_path):
    path = tmp_path / "definitions.json"
    call_command("definitions", "export", str(path), stderr=StringIO())
    assert json.loads(path.read_text()) == demo_document
    doc = json.loads(path.read_text())
    next(q for q in doc["queues"] if q["name"] == "ALERTS")["max_retries"] = 9
    path.write_text(json.dumps(doc))

    out = StringIO()
    call_command("definitions", "import", "--dry-run", str(path), stdout=out)
    assert out.getvalue().splitlines() == [
        "change queues ALERTS",
        "         max_retries: 5 -> 9",
        "Dry run, nothing changed: 0 to create, 1 to change, 0 to delete.",
    ]
    assert Queue.objects.get(name="ALERTS").max_retries == 5

    out = StringIO()
    call_command("definitions", "import", str(path), stdout=out)
    assert "Imported: 0 to create, 1 to change, 0 to delete." in out.getvalue()
    assert Queue.objects.get(name="ALERTS").max_retries == 9

    no_secrets = tmp_path / "plain.json"
    call_command("definitions", "export", "--no-secrets", str(no_secrets), stderr=StringIO())
    assert json.loads(no_secrets.read_text()) == definitions_export(secrets="omitted")


def test_a_bad_document_is_a_command_error_naming_the_path(db, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "aq-console-definitions", "version": 1, "queues": [{}]}))
    with pytest.raises(CommandError, match=r"^queues\[0\]\.name: name is required"):
        call_command("definitions", "import", str(path), stdout=StringIO())
