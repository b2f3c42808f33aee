"""Evaluation contexts through the API: create with typed variables, read, drop; the built-in
STREAMS$_EVALUATION_CONTEXT and contexts in use cannot be dropped."""

from __future__ import annotations

from rules import services
from rules.models import EvaluationContext

URL = "/api/evaluation-contexts/"


def test_an_administrator_creates_reads_and_drops_a_context(admin_api):
    body = {
        "name": "ORDERS_CTX",
        "comment": "order messages",
        "variables": [
            {"name": "ORD", "variable_type": "USER", "user_type": "APP.ORDER_MSG"},
            {"name": "DML", "variable_type": "SYS.LCR$_ROW_RECORD"},
        ],
    }

    created = admin_api.post(URL, body)

    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["name"] == "ORDERS_CTX"
    assert data["builtin"] is False
    assert {(v["name"], v["variable_type"], v["user_type"]) for v in data["variables"]} == {
        ("ORD", "USER", "APP.ORDER_MSG"),
        ("DML", "SYS.LCR$_ROW_RECORD", ""),
    }
    assert admin_api.get(f"{URL}ORDERS_CTX/").json()["id"] == data["id"]
    assert admin_api.get(f"{URL}{data['id']}/").json()["comment"] == "order messages"

    assert admin_api.delete(f"{URL}ORDERS_CTX/").status_code == 204
    assert not EvaluationContext.objects.filter(name="ORDERS_CTX").exists()


def test_the_built_in_streams_context_is_listed_and_cannot_be_dropped(admin_api, streams_context):
    listed = {c["name"]: c for c in admin_api.get(URL).json()["results"]}
    streams = listed["STREAMS$_EVALUATION_CONTEXT"]
    assert streams["builtin"] is True
    assert {v["name"]: v["variable_type"] for v in streams["variables"]} == {
        "DDL": "SYS.LCR$_DDL_RECORD",
        "DML": "SYS.LCR$_ROW_RECORD",
    }

    refused = admin_api.delete(f"{URL}{streams_context.pk}/")

    assert refused.status_code == 409
    assert "built in" in refused.json()["detail"]
    assert EvaluationContext.objects.filter(pk=streams_context.pk).exists()


def test_a_context_used_by_a_rule_cannot_be_dropped(admin_api, admin_user):
    ctx = services.evaluation_context_create(
        user=admin_user,
        name="MSG_CTX",
        variables=[{"name": "M", "variable_type": "USER", "user_type": "APP.T"}],
    )
    services.rule_create(
        user=admin_user, name="USES_CTX", condition=":m.x = 1", evaluation_context=ctx
    )

    refused = admin_api.delete(f"{URL}MSG_CTX/")

    assert refused.status_code == 409
    assert "MSG_CTX" in refused.json()["detail"]
    assert EvaluationContext.objects.filter(name="MSG_CTX").exists()


def test_a_second_context_of_the_same_name_is_a_conflict_on_name(admin_api, admin_user):
    services.evaluation_context_create(
        user=admin_user,
        name="DUP_CTX",
        variables=[{"name": "A", "variable_type": "USER", "user_type": "T.T"}],
    )

    refused = admin_api.post(
        URL,
        {"name": "dup_ctx", "variables": [{"name": "B", "variable_type": "SYS.LCR$_ROW_RECORD"}]},
    )

    assert refused.status_code == 409
    assert "name" in refused.json()


def test_bad_variables_are_refused_naming_the_variable(admin_api, rules_snapshot):
    before = rules_snapshot()
    cases = [
        ([{"name": "A", "variable_type": "NOPE"}], "variables[0].variable_type"),
        ([{"name": "A", "variable_type": "USER"}], "variables[0].user_type"),
        (
            [
                {"name": "A", "variable_type": "SYS.LCR$_ROW_RECORD"},
                {"name": "a", "variable_type": "SYS.LCR$_DDL_RECORD"},
            ],
            "variables[1].name",
        ),
    ]
    for variables, field in cases:
        refused = admin_api.post(URL, {"name": "BAD_CTX", "variables": variables})
        assert refused.status_code == 400, (variables, refused.json())
        assert field in refused.json(), (variables, refused.json())
    before.assert_unchanged()
