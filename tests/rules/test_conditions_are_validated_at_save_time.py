"""A condition is parsed and validated when a rule is saved, never first at evaluation: a syntax
error, an unknown variable or function, or an empty condition is a 400 naming ``condition`` (with
the line and column), and nothing is written."""

from __future__ import annotations

import pytest

from rules import services

URL = "/api/rules/"

BAD_CONDITIONS = [
    # (condition, words the error must contain)
    (":dml.get_object_owner() = 'HR' AND", ["line 1, column 35", "end of input"]),
    (":dml.get_object_owner( = 'HR'", ["line 1, column"]),
    (":dml.get_object_owner() = 'HR'\n  AND (:dml.get_object_name() = 'X'", ["line 2, column"]),
    (":nosuchvar.get_object_owner() = 'HR'", ["line 1, column 1", "NOSUCHVAR"]),
    (":dml.no_such_method() = 'HR'", ["line 1, column", "NO_SUCH_METHOD"]),
    ("NO_SUCH_FUNCTION(:dml.get_object_owner()) = 'HR'", ["line 1, column 1", "NO_SUCH_FUNCTION"]),
]


@pytest.mark.parametrize(("condition", "words"), BAD_CONDITIONS)
def test_a_bad_condition_is_refused_at_create_naming_line_and_column(
    admin_api, streams_context, rules_snapshot, condition, words
):
    before = rules_snapshot()

    refused = admin_api.post(
        URL,
        {
            "name": "BAD_RULE",
            "condition": condition,
            "evaluation_context": "STREAMS$_EVALUATION_CONTEXT",
        },
    )

    assert refused.status_code == 400
    [message] = refused.json()["condition"]
    for word in words:
        assert word.lower() in message.lower(), message
    before.assert_unchanged()


@pytest.mark.parametrize("condition", ["", "   ", "\n\t"])
def test_an_empty_condition_is_refused(admin_api, rules_snapshot, condition):
    before = rules_snapshot()

    refused = admin_api.post(URL, {"name": "EMPTY_RULE", "condition": condition})

    assert refused.status_code == 400
    assert "condition" in refused.json()
    before.assert_unchanged()


def test_a_missing_or_null_condition_is_refused(admin_api, rules_snapshot):
    before = rules_snapshot()

    for body in ({"name": "NO_COND"}, {"name": "NO_COND", "condition": None}):
        refused = admin_api.post(URL, body)
        assert refused.status_code == 400, body
        assert "condition" in refused.json(), body
    before.assert_unchanged()


def test_a_variable_the_rules_context_lacks_is_refused(admin_api, admin_user, rules_snapshot):
    services.evaluation_context_create(
        user=admin_user,
        name="ORDER_CTX",
        variables=[{"name": "ORD", "variable_type": "USER", "user_type": "APP.ORDER"}],
    )
    before = rules_snapshot()

    refused = admin_api.post(
        URL,
        {
            "name": "WRONG_VAR",
            "condition": ":dml.get_object_owner() = 'HR'",
            "evaluation_context": "ORDER_CTX",
        },
    )

    assert refused.status_code == 400
    [message] = refused.json()["condition"]
    assert "line 1, column 1" in message
    before.assert_unchanged()
    # The context's own variable is fine.
    assert (
        admin_api.post(
            URL,
            {
                "name": "RIGHT_VAR",
                "condition": ":ord.amount > 10",
                "evaluation_context": "ORDER_CTX",
            },
        ).status_code
        == 201
    )


def test_a_ddl_only_method_on_a_row_change_record_is_refused(admin_api, streams_context):
    refused = admin_api.post(
        URL,
        {
            "name": "ROW_OBJECT_TYPE",
            "condition": ":dml.get_object_type() = 'TABLE'",
            "evaluation_context": "STREAMS$_EVALUATION_CONTEXT",
        },
    )

    assert refused.status_code == 400
    assert "GET_OBJECT_TYPE" in refused.json()["condition"][0].upper()


def test_a_bad_condition_is_refused_at_update_and_the_rule_keeps_its_old_one(
    admin_api, admin_user, streams_context, rules_snapshot
):
    services.rule_create(
        user=admin_user,
        name="STAYS",
        condition=":dml.get_object_name() = 'A'",
        evaluation_context=streams_context,
    )
    before = rules_snapshot()

    for condition in ("", ":dml.get_object_name() = ", ":nope.x = 1"):
        refused = admin_api.patch(f"{URL}STAYS/", {"condition": condition})
        assert refused.status_code == 400, condition
        assert "condition" in refused.json(), condition
    before.assert_unchanged()
