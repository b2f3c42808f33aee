"""Rule sets through the API: create, add and remove rules (DBMS_RULE_ADM.ADD_RULE/REMOVE_RULE),
drop; one rule may be in several sets; a rule must be valid in the set's evaluation context."""

from __future__ import annotations

from rules import services
from rules.models import Rule, RuleSet, RuleSetRule
from tests.rules.lang_seed import G5, G7, G9

URL = "/api/rule-sets/"


def test_an_administrator_builds_a_rule_set_and_takes_it_apart(
    admin_api, admin_user, streams_context
):
    for name, condition in (("HR_ROWS", G5), ("LOCATIONS_ROWS", G7)):
        services.rule_create(user=admin_user, name=name, condition=condition)

    created = admin_api.post(
        URL,
        {"name": "APPLY_RS", "evaluation_context": "STREAMS$_EVALUATION_CONTEXT", "comment": "c"},
    )
    assert created.status_code == 201, created.json()
    assert created.json()["members"] == []
    assert created.json()["rule_count"] == 0

    for name in ("HR_ROWS", "LOCATIONS_ROWS"):
        added = admin_api.post(f"{URL}APPLY_RS/add_rule/", {"rule": name})
        assert added.status_code == 201, added.json()
    data = admin_api.get(f"{URL}APPLY_RS/").json()
    assert data["rule_count"] == 2
    assert [(m["rule"], m["condition"], m["enabled"]) for m in data["members"]] == [
        ("HR_ROWS", G5, True),
        ("LOCATIONS_ROWS", G7, True),
    ]

    removed = admin_api.post(f"{URL}APPLY_RS/remove_rule/", {"rule": "HR_ROWS"})
    assert removed.status_code == 200, removed.json()
    assert [m["rule"] for m in removed.json()["members"]] == ["LOCATIONS_ROWS"]

    assert admin_api.delete(f"{URL}APPLY_RS/").status_code == 204
    assert not RuleSet.objects.filter(name="APPLY_RS").exists()
    # Dropping a rule set leaves its rules.
    assert set(Rule.objects.values_list("name", flat=True)) == {"HR_ROWS", "LOCATIONS_ROWS"}


def test_one_rule_may_be_in_several_rule_sets(admin_api, seed_sets):
    added = admin_api.post(f"{URL}EMPTY_SET/add_rule/", {"rule": "JOB_HISTORY_NEG"})

    assert added.status_code == 201, added.json()
    rule = admin_api.get("/api/rules/JOB_HISTORY_NEG/").json()
    assert sorted(rule["rule_sets"]) == ["EMPTY_SET", "N_SET"]


def test_a_rule_is_added_once(admin_api, seed_sets, rules_snapshot):
    before = rules_snapshot()

    refused = admin_api.post(f"{URL}P_SET/add_rule/", {"rule": "HR_SCHEMA_POS"})

    assert refused.status_code == 409
    assert "rule" in refused.json()
    before.assert_unchanged()


def test_removing_a_rule_that_is_not_in_the_set_is_refused_naming_rule(
    admin_api, seed_sets, rules_snapshot
):
    before = rules_snapshot()

    refused = admin_api.post(f"{URL}P_SET/remove_rule/", {"rule": "JOB_HISTORY_NEG"})

    assert refused.status_code == 400
    assert "rule" in refused.json()
    before.assert_unchanged()


def test_an_unknown_rule_or_rule_set_is_refused(admin_api, seed_sets, rules_snapshot):
    before = rules_snapshot()

    unknown_rule = admin_api.post(f"{URL}P_SET/add_rule/", {"rule": "NO_SUCH_RULE"})
    unknown_set = admin_api.post(f"{URL}NO_SUCH_SET/add_rule/", {"rule": "HR_SCHEMA_POS"})

    assert unknown_rule.status_code == 400
    assert "rule" in unknown_rule.json()
    assert unknown_set.status_code == 404
    before.assert_unchanged()


def test_a_rule_with_another_evaluation_context_is_refused(admin_api, admin_user, seed_sets):
    ctx = services.evaluation_context_create(
        user=admin_user,
        name="ORDER_CTX",
        variables=[{"name": "ORD", "variable_type": "USER", "user_type": "APP.ORDER"}],
    )
    services.rule_create(
        user=admin_user, name="BIG_ORDERS", condition=":ord.amount > 100", evaluation_context=ctx
    )

    refused = admin_api.post(f"{URL}P_SET/add_rule/", {"rule": "BIG_ORDERS"})

    assert refused.status_code == 400
    assert "ORDER_CTX" in refused.json()["rule"][0]
    assert not RuleSetRule.objects.filter(rule__name="BIG_ORDERS").exists()


def test_a_rule_without_a_context_must_be_valid_in_the_sets_context(
    admin_api, admin_user, seed_sets, rules_snapshot
):
    """A rule made without an evaluation context takes the rule set's: a variable that context
    lacks is an error when the rule is added, not a silent NULL at evaluation."""
    services.rule_create(user=admin_user, name="ORDER_RULE", condition=":ord.amount > 100")
    before = rules_snapshot()

    refused = admin_api.post(f"{URL}P_SET/add_rule/", {"rule": "ORDER_RULE"})

    assert refused.status_code == 400
    [message] = refused.json()["rule"]
    assert "ORD" in message and "column 1" in message
    before.assert_unchanged()


def test_a_rule_in_a_set_cannot_be_changed_to_a_condition_the_sets_context_refuses(
    admin_api, admin_user, seed_sets, rules_snapshot
):
    services.rule_create(user=admin_user, name="NO_CTX_RULE", condition=G9)
    services.rule_set_add_rule(
        user=admin_user, rule_set=seed_sets["P"], rule=Rule.objects.get(name="NO_CTX_RULE")
    )
    before = rules_snapshot()

    refused = admin_api.patch("/api/rules/NO_CTX_RULE/", {"condition": ":ord.amount > 100"})

    assert refused.status_code == 400
    assert "condition" in refused.json()
    before.assert_unchanged()
