"""A link's password is stored encrypted and shown as <<ENCRYPTED>>: never in the API, the
pages (list, detail, alter form), DBA_DB_LINKS or the change log."""

from __future__ import annotations

import json

from core.models import ChangeLogEntry
from tests.sites.helpers import SITE_PASSWORD


def test_no_answer_holds_the_password(admin_api, admin_client, make_link):
    link = make_link("SITE_B")
    admin_api.patch(f"/api/db-links/{link.pk}/", {"comment": "read"})

    answers = {
        "api list": admin_api.get("/api/db-links/").content,
        "api detail": admin_api.get("/api/db-links/SITE_B/").content,
        "dba_db_links": admin_api.get("/api/status/dba_db_links/").content,
        "change log": admin_api.get("/api/changelog/").content,
        "list page": admin_client.get("/sites/").content,
        "detail page": admin_client.get(f"/sites/links/{link.pk}/").content,
        "alter page": admin_client.get(f"/sites/links/{link.pk}/edit/").content,
    }

    for where, content in answers.items():
        assert SITE_PASSWORD.encode() not in content, where
        assert link.password_encrypted.encode() not in content, where
    assert json.loads(answers["api detail"])["password"] == "<<ENCRYPTED>>"
    assert b"&lt;&lt;ENCRYPTED&gt;&gt;" in answers["detail page"]
    for entry in ChangeLogEntry.objects.filter(object_type="sites.databaselink"):
        for snapshot in (entry.before, entry.after):
            assert snapshot is None or snapshot["password_encrypted"] == "<<ENCRYPTED>>"
