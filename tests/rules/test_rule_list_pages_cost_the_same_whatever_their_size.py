"""The rules list pages issue the same number of SQL queries for 5 rows or 45 (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rules import services
from rules.models import EvaluationContext, RuleSet


def grow(user, streams_context, start: int, stop: int) -> None:  # type: ignore[no-untyped-def]
    big = RuleSet.objects.get_or_create(
        name="BIG_SET", defaults={"evaluation_context": streams_context}
    )[0]
    for i in range(start, stop):
        ctx = services.evaluation_context_create(
            user=user,
            name=f"CTX_{i}",
            variables=[
                {"name": "M", "variable_type": "USER", "user_type": f"APP.T{i}"},
                {"name": "DML", "variable_type": "SYS.LCR$_ROW_RECORD"},
            ],
        )
        rs = services.rule_set_create(user=user, name=f"RS_{i}", evaluation_context=ctx)
        rule = services.rule_create(
            user=user, name=f"RULE_{i}", condition=f":m.n = {i}", evaluation_context=ctx
        )
        services.rule_set_add_rule(user=user, rule_set=rs, rule=rule)
        table_rule = services.rule_create(
            user=user,
            name=f"TABLE_RULE_{i}",
            condition=f":dml.get_object_name() = 'T{i}'",
            evaluation_context=streams_context,
            streams_rule_type="TABLE",
            rule_type="DML",
            schema_name="HR",
            object_name=f"T{i}",
        )
        services.rule_set_add_rule(user=user, rule_set=big, rule=table_rule)


def count(client, path: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    ("path", "row_marker"),
    [
        ("/rules/", 'href="/rules/'),
        ("/rules/sets/", 'href="/rules/sets/'),
        ("/rules/contexts/", 'href="/rules/contexts/'),
        ("/status/?view=dba_rules", "RULE_"),
        ("/status/?view=dba_rule_sets", "RS_"),
        ("/status/?view=dba_rule_set_rules", "RULE_"),
        ("/status/?view=dba_streams_rules", "TABLE_RULE_"),
        ("/status/?view=dba_evaluation_context_vars", "CTX_"),
    ],
)
def test_a_rules_list_page_costs_the_same_for_more_rows(
    admin_client, admin_user, streams_context, path, row_marker
):
    sep = "&" if "?" in path else "?"
    grow(admin_user, streams_context, 0, 5)
    small = count(admin_client, f"{path}{sep}per_page=5")

    grow(admin_user, streams_context, 5, 45)
    large = count(admin_client, f"{path}{sep}per_page=45")
    html = admin_client.get(f"{path}{sep}per_page=45").content.decode()

    assert html.count(row_marker) >= 40  # the larger page really shows more rows
    assert large == small


@pytest.mark.parametrize("page", ["set", "context", "rule"])
def test_a_rules_detail_page_costs_the_same_for_more_members(
    admin_client, admin_user, streams_context, page
):
    from rules.models import Rule

    def path() -> str:
        if page == "set":
            return f"/rules/sets/{RuleSet.objects.get(name='BIG_SET').pk}/"
        if page == "context":
            return f"/rules/contexts/{streams_context.pk}/?per_page=50"
        return f"/rules/{Rule.objects.get(name='SHARED').pk}/"

    shared = services.rule_create(
        user=admin_user,
        name="SHARED",
        condition=":dml.get_object_owner() = 'HR'",
        evaluation_context=streams_context,
    )
    grow(admin_user, streams_context, 0, 3)
    for rs in RuleSet.objects.filter(evaluation_context=streams_context):
        services.rule_set_add_rule(user=admin_user, rule_set=rs, rule=shared)
    small = count(admin_client, path())

    grow(admin_user, streams_context, 3, 30)
    for i in range(5):
        rs = services.rule_set_create(
            user=admin_user, name=f"MORE_{i}", evaluation_context=streams_context
        )
        services.rule_set_add_rule(user=admin_user, rule_set=rs, rule=shared)
    large = count(admin_client, path())

    assert large == small
    assert EvaluationContext.objects.count() > 30
