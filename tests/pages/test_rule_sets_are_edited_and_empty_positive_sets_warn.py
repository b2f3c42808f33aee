"""Issue 16, defect 4 through the API: a rule set's context and comment change (PATCH, the same
service as its edit page) only when its rules fit the new context; a propagation given an empty
positive rule set is created (Oracle allows it) with a warning saying it discards everything."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_rule_set_takes_a_context_its_rules_fit_and_refuses_one_they_do_not(
    admin_api, admin_user
):
    from rules import services as rs
    from rules.models import RuleSet

    rs.streams_evaluation_context()
    rs.aq_message_evaluation_context()
    rule_set = rs.rule_set_create(user=admin_user, name="RS_ORDERS")
    rule = rs.rule_create(user=admin_user, name="R_X", condition=":msg.x = 1")
    rs.rule_set_add_rule(user=admin_user, rule_set=rule_set, rule=rule)

    ok = admin_api.patch(
        "/api/rule-sets/RS_ORDERS/",
        {"evaluation_context": "AQ$_MESSAGE_EVALUATION_CONTEXT", "comment": "orders"},
        format="json",
    )
    assert ok.status_code == 200, ok.content
    assert ok.json()["evaluation_context"] == "AQ$_MESSAGE_EVALUATION_CONTEXT"

    refused = admin_api.patch(
        "/api/rule-sets/RS_ORDERS/",
        {"evaluation_context": "STREAMS$_EVALUATION_CONTEXT"},
        format="json",
    )
    assert refused.status_code == 400, refused.content
    assert "R_X" in refused.json()["evaluation_context"][0]
    rule_set = RuleSet.objects.get(pk=rule_set.pk)
    assert (rule_set.evaluation_context.name, rule_set.comment) == (
        "AQ$_MESSAGE_EVALUATION_CONTEXT",
        "orders",
    )


def test_an_empty_positive_rule_set_is_a_warning_not_an_error(admin_api, propagation_queues):
    from rules import services as rs

    rs.rule_set_create(user=None, name="RS_NONE")
    response = admin_api.post(
        "/api/propagations/",
        {
            "name": "P_EMPTY",
            "source_queue": "SRC",
            "destination_queue": "DST",
            "positive_rule_set": "RS_NONE",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    [warning] = response.json()["warnings"]
    assert "RS_NONE is empty" in warning and "discards all messages" in warning

    ruled = admin_api.post(
        "/api/propagations/",
        {
            "name": "P_RULED",
            "source_queue": "SRC",
            "destination_queue": "OTHER",
            "positive_rule_set": "RS_EU",
        },
        format="json",
    )
    assert ruled.status_code == 201, ruled.content
    assert ruled.json()["warnings"] == []
