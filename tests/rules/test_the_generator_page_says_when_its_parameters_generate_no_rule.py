"""Schema rules with neither DML nor DDL generate nothing (as in Oracle): the generator page says
so on the form (400) instead of failing on the empty result, and writes nothing."""

from __future__ import annotations

from rules.models import Rule, RuleSet


def test_nothing_to_generate_is_said_on_the_form(admin_client):
    response = admin_client.post("/rules/generate/schema/", {"schema_name": "hr"})

    assert response.status_code == 400
    assert "generate no rule" in response.content.decode()
    assert not Rule.objects.exists()
    assert not RuleSet.objects.exists()


def test_with_dml_the_rules_are_created(admin_client):
    response = admin_client.post(
        "/rules/generate/schema/", {"schema_name": "hr", "include_dml": "on"}
    )

    assert response.status_code == 302
    assert Rule.objects.filter(schema_name__iexact="hr").exists()
