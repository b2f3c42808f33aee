"""Bad input in the rules forms: the form comes back (400) with the error on the field at fault,
a bad condition with its line and column, never a 500, and nothing is written."""

from __future__ import annotations

import pytest

from rules import services
from rules.models import Rule
from tests.rules.helpers import assert_form_error
from tests.rules.lang_seed import G5, G7


@pytest.mark.parametrize(
    ("data", "field", "texts"),
    [
        (
            {"condition": ":dml.get_object_owner() = 'HR' AND"},
            "condition",
            ["line 1, column 35"],
        ),
        (
            {"condition": ":dml.get_object_owner() = 'HR'\nOR :dml.nope() = 1"},
            "condition",
            ["line 2, column 9", "NOPE"],
        ),
        ({"condition": ":msg.region = 'EU'"}, "condition", ["line 1, column 1"]),
        ({"condition": ""}, "condition", []),
        ({"condition": "   "}, "condition", []),
        ({"name": "1BAD"}, "name", []),
        ({"name": "has space"}, "name", []),
        ({"name": "HR_SCHEMA_POS"}, "name", []),
        ({"name": "hr_schema_pos"}, "name", ["already exists"]),
        ({"action_context": "{"}, "action_context", []),
        ({"action_context": "[1, 2]"}, "action_context", ["JSON object"]),
    ],
)
def test_the_new_rule_form_names_the_field(
    admin_client, seed_sets, streams_context, rules_snapshot, data, field, texts
):
    before = rules_snapshot()
    body = {"name": "NEW_RULE", "condition": G7, "evaluation_context": streams_context.pk, **data}

    response = admin_client.post("/rules/add/", body)

    assert_form_error(response, field, *texts)
    before.assert_unchanged()


def test_the_new_rule_form_saves_a_good_rule(admin_client, streams_context):
    response = admin_client.post(
        "/rules/add/",
        {
            "name": "NEW_RULE",
            "condition": G5,
            "evaluation_context": streams_context.pk,
            "action_context": '{"route": "hr"}',
            "comment": "from the form",
        },
    )

    rule = Rule.objects.get(name="NEW_RULE")
    assert response.status_code == 302
    assert response.url == f"/rules/{rule.pk}/"
    assert (rule.condition, rule.classification, rule.action_context) == (
        G5,
        "simple",
        {"route": "hr"},
    )


def test_the_edit_form_refuses_a_bad_condition_and_keeps_the_old_one(
    admin_client, seed_sets, streams_context, rules_snapshot
):
    rule = Rule.objects.get(name="HR_SCHEMA_POS")
    before = rules_snapshot()

    response = admin_client.post(
        f"/rules/{rule.pk}/edit/",
        {"condition": "(:dml.get_object_owner() = 'HR'", "evaluation_context": streams_context.pk},
    )

    html = assert_form_error(response, "condition", "line 1, column 32")
    assert "(:dml.get_object_owner() = &#x27;HR&#x27;" in html  # what was typed comes back
    before.assert_unchanged()


def test_the_edit_form_refuses_a_context_other_than_the_rule_sets(
    admin_client, admin_user, seed_sets, rules_snapshot
):
    ctx = services.evaluation_context_create(
        user=admin_user,
        name="ROWS_ONLY",
        variables=[{"name": "DML", "variable_type": "SYS.LCR$_ROW_RECORD"}],
    )
    rule = Rule.objects.get(name="HR_SCHEMA_POS")
    before = rules_snapshot()

    response = admin_client.post(
        f"/rules/{rule.pk}/edit/", {"condition": G5, "evaluation_context": ctx.pk}
    )

    assert_form_error(response, "evaluation_context", "P_SET")
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "9LIVES"}, "name"),
        ({"name": "p_set"}, "name"),
    ],
)
def test_the_new_rule_set_form_names_the_field(
    admin_client, seed_sets, rules_snapshot, data, field
):
    before = rules_snapshot()

    assert_form_error(admin_client.post("/rules/sets/add/", data), field)
    before.assert_unchanged()


def test_adding_a_rule_twice_or_from_another_context_names_the_rule(
    admin_client, admin_user, seed_sets, rules_snapshot
):
    services.rule_create(user=admin_user, name="ORDER_RULE", condition=":ord.amount > 1")
    before = rules_snapshot()
    p = seed_sets["P"].pk

    twice = admin_client.post(
        f"/rules/sets/{p}/rules/add/", {"rule": Rule.objects.get(name="HR_SCHEMA_POS").pk}
    )
    invalid = admin_client.post(
        f"/rules/sets/{p}/rules/add/", {"rule": Rule.objects.get(name="ORDER_RULE").pk}
    )
    unknown = admin_client.post(f"/rules/sets/{p}/rules/add/", {"rule": 999999})

    assert_form_error(twice, "rule", "already in P_SET")
    assert_form_error(invalid, "rule", "ORD")
    assert_form_error(unknown, "rule")
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field", "text"),
    [
        ({"name": "C1", "variables": ""}, "variables", ""),
        ({"name": "C1", "variables": "\n  \n"}, "variables", ""),
        ({"name": "C1", "variables": "ONLYNAME"}, "variables", "Line 1"),
        ({"name": "C1", "variables": "A SYS.LCR$_ROW_RECORD\nB T C"}, "variables", "Line 2"),
        (
            {"name": "C1", "variables": "A SYS.LCR$_ROW_RECORD\na SYS.LCR$_DDL_RECORD"},
            "variables",
            "twice",
        ),
        ({"name": "streams$_evaluation_context", "variables": "A APP.T"}, "name", "already exists"),
        ({"name": "", "variables": "A APP.T"}, "name", ""),
    ],
)
def test_the_new_context_form_names_the_field(
    admin_client, streams_context, rules_snapshot, data, field, text
):
    before = rules_snapshot()

    assert_form_error(
        admin_client.post("/rules/contexts/add/", data), field, *([text] if text else [])
    )
    before.assert_unchanged()


def test_the_new_context_form_saves_typed_variables(admin_client):
    response = admin_client.post(
        "/rules/contexts/add/",
        {"name": "ORDER_CTX", "variables": "ord APP.ORDER\nDML sys.lcr$_row_record\n"},
    )

    assert response.status_code == 302
    from rules.models import EvaluationContext

    ctx = EvaluationContext.objects.get(name="ORDER_CTX")
    assert sorted(ctx.variables.values_list("name", "variable_type", "user_type")) == [
        ("DML", "SYS.LCR$_ROW_RECORD", ""),
        ("ord", "USER", "APP.ORDER"),
    ]
