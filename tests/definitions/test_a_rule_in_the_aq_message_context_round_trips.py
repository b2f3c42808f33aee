"""A rule in the built-in AQ$_MESSAGE_EVALUATION_CONTEXT (the rule form's default, made on first
use) exports by that name and imports into a site that has not made the context yet."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_it_imports_where_the_context_was_never_made(admin_api):
    from definitions.selectors import definitions_export
    from rules import services as rs
    from rules.models import AQ_MESSAGE_EVALUATION_CONTEXT, EvaluationContext, Rule

    ctx = rs.aq_message_evaluation_context()
    rs.rule_create(user=None, name="R_MSG", condition=":msg.x = 1", evaluation_context=ctx)
    doc = definitions_export()
    Rule.objects.all().delete()
    EvaluationContext.objects.filter(name=AQ_MESSAGE_EVALUATION_CONTEXT).delete()

    r = admin_api.post("/api/definitions/", doc, format="json")

    assert r.status_code in (200, 201), r.content
    assert Rule.objects.get(name="R_MSG").evaluation_context.name == AQ_MESSAGE_EVALUATION_CONTEXT
