"""Every rules write through the API leaves exactly one change-log entry naming its verb, its
object and its user; a generator leaves one per object it made."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from rules import services
from rules.models import Rule
from tests.rules.lang_seed import G5, G7


@pytest.fixture
def world(admin_user, streams_context) -> None:
    services.evaluation_context_create(
        user=admin_user,
        name="SPARE_CTX",
        variables=[{"name": "M", "variable_type": "USER", "user_type": "APP.T"}],
    )
    rs = services.rule_set_create(user=admin_user, name="RS", evaluation_context=streams_context)
    for name, condition in (("IN_SET", G5), ("LOOSE", G7)):
        services.rule_create(
            user=admin_user, name=name, condition=condition, evaluation_context=streams_context
        )
    services.rule_set_add_rule(user=admin_user, rule_set=rs, rule=Rule.objects.get(name="IN_SET"))


WRITES: list[tuple] = [
    # (verb, method, path, body, object type, object repr)
    (
        "evaluation_context_create",
        "post",
        "/api/evaluation-contexts/",
        {"name": "NEW_CTX", "variables": [{"name": "D", "variable_type": "SYS.LCR$_ROW_RECORD"}]},
        "rules.evaluationcontext",
        "NEW_CTX",
    ),
    (
        "evaluation_context_delete",
        "delete",
        "/api/evaluation-contexts/SPARE_CTX/",
        None,
        "rules.evaluationcontext",
        "SPARE_CTX",
    ),
    (
        "rule_create",
        "post",
        "/api/rules/",
        {"name": "NEW_RULE", "condition": G7},
        "rules.rule",
        "NEW_RULE",
    ),
    ("rule_update", "patch", "/api/rules/LOOSE/", {"comment": "changed"}, "rules.rule", "LOOSE"),
    ("rule_delete", "delete", "/api/rules/LOOSE/", None, "rules.rule", "LOOSE"),
    ("rule_set_create", "post", "/api/rule-sets/", {"name": "NEW_RS"}, "rules.ruleset", "NEW_RS"),
    ("rule_set_delete", "delete", "/api/rule-sets/RS/", None, "rules.ruleset", "RS"),
    (
        "rule_set_add_rule",
        "post",
        "/api/rule-sets/RS/add_rule/",
        {"rule": "LOOSE"},
        "rules.ruleset",
        "RS",
    ),
    (
        "rule_set_remove_rule",
        "post",
        "/api/rule-sets/RS/remove_rule/",
        {"rule": "IN_SET"},
        "rules.ruleset",
        "RS",
    ),
]


@pytest.mark.parametrize(
    ("verb", "method", "path", "body", "object_type", "object_repr"),
    WRITES,
    ids=[w[0] for w in WRITES],
)
def test_a_write_leaves_one_entry(
    admin_api, admin_user, world, verb, method, path, body, object_type, object_repr
):
    before = set(ChangeLogEntry.objects.values_list("pk", flat=True))

    response = getattr(admin_api, method)(path, body)

    assert response.status_code in (200, 201, 204), response.content
    [entry] = ChangeLogEntry.objects.exclude(pk__in=before)
    assert (entry.verb, entry.object_type, entry.object_repr) == (verb, object_type, object_repr)
    assert (entry.user, entry.username) == (admin_user, "alice")
    assert entry.before or entry.after


def test_an_update_records_before_and_after(admin_api, world):
    admin_api.patch("/api/rules/LOOSE/", {"condition": G5})

    entry = ChangeLogEntry.objects.filter(verb="rule_update").get()
    assert (entry.before["condition"], entry.after["condition"]) == (G7, G5)


def test_reads_tries_and_dry_runs_leave_no_entry(admin_api, world):
    before = ChangeLogEntry.objects.count()
    message = {
        "kind": "row_lcr",
        "command_type": "INSERT",
        "object_owner": "HR",
        "object_name": "LOCATIONS",
        "source_database_name": "DBS1.EXAMPLE.COM",
    }

    for path, body in (
        ("/api/rules/validate/", {"condition": G5}),
        ("/api/rules/LOOSE/evaluate/", {"message": message}),
        ("/api/rule-sets/RS/test/", {"message": message}),
        ("/api/rule-sets/decide/", {"message": message, "positive": "RS", "negative": None}),
        ("/api/rules/generate/", {"kind": "table", "table_name": "hr.x", "dry_run": True}),
    ):
        assert admin_api.post(path, body).status_code == 200, path
    for path in ("/api/rules/", "/api/rule-sets/", "/api/evaluation-contexts/"):
        assert admin_api.get(path).status_code == 200

    assert ChangeLogEntry.objects.count() == before


def test_a_generator_logs_each_rule_set_rule_and_membership_it_made(admin_api, world):
    before = set(ChangeLogEntry.objects.values_list("pk", flat=True))

    made = admin_api.post(
        "/api/rules/generate/",
        {"kind": "table", "table_name": "hr.x", "include_ddl": True, "rule_set": "GEN_RS"},
    ).json()

    entries = ChangeLogEntry.objects.exclude(pk__in=before)
    assert sorted((e.verb, e.object_repr) for e in entries) == sorted(
        [("rule_set_create", "GEN_RS")]
        + [("rule_create", r["name"]) for r in made]
        + [("rule_set_add_rule", "GEN_RS")] * len(made)
    )
    assert {e.username for e in entries} == {"alice"}


def test_a_refused_write_leaves_no_entry(admin_api, world):
    before = ChangeLogEntry.objects.count()

    assert admin_api.delete("/api/rules/IN_SET/").status_code == 409
    assert admin_api.post("/api/rules/", {"name": "BAD", "condition": ":dml.("}).status_code == 400
    assert (
        admin_api.post(
            "/api/rules/generate/",
            {
                "kind": "subset",
                "table_name": "hr.r",
                "dml_condition": "a=1",
                "inclusion_rule": False,
            },
        ).status_code
        == 400
    )

    assert ChangeLogEntry.objects.count() == before
