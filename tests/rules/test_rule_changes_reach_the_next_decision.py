"""Compiled rule sets are cached, but never stale: a changed condition, a removed or disabled rule
decides the very next message. A rule without its own evaluation context is evaluated in its
rule set's."""

from __future__ import annotations

from rules import services
from rules.models import Rule
from tests.rules.helpers import row_lcr, user_message

DECIDE = "/api/rule-sets/decide/"


def decision(api, message, positive="P_SET", negative=None):  # type: ignore[no-untyped-def]
    got = api.post(DECIDE, {"message": message, "positive": positive, "negative": negative})
    assert got.status_code == 200, got.json()
    return got.json()["decision"]


def test_a_changed_condition_decides_the_next_message(admin_api, monitor_api, seed_sets):
    oe = row_lcr("INSERT", "OE", "ORDERS")
    assert decision(monitor_api, oe) == "DISCARD"

    changed = admin_api.patch(
        "/api/rules/HR_SCHEMA_POS/", {"condition": ":dml.get_object_owner() = 'OE'"}
    )
    assert changed.status_code == 200, changed.json()

    assert decision(monitor_api, oe) == "PERFORM"
    assert decision(monitor_api, row_lcr("INSERT", "HR", "DEPARTMENTS")) == "DISCARD"


def test_a_removed_rule_stops_deciding_at_once(admin_api, monitor_api, seed_sets):
    job_history = row_lcr("INSERT", "HR", "JOB_HISTORY")
    assert decision(monitor_api, job_history, negative="N_SET") == "DISCARD"

    admin_api.post("/api/rule-sets/N_SET/remove_rule/", {"rule": "JOB_HISTORY_NEG"})

    assert decision(monitor_api, job_history, negative="N_SET") == "PERFORM"


def test_a_disabled_member_is_not_evaluated(admin_api, monitor_api, seed_sets):
    added = admin_api.post(
        "/api/rule-sets/EMPTY_SET/add_rule/", {"rule": "HR_SCHEMA_POS", "enabled": False}
    )
    assert added.status_code == 201, added.json()
    assert added.json()["members"] == [
        {
            "rule": "HR_SCHEMA_POS",
            "condition": seed_sets["P"].rules.get().condition,
            "enabled": False,
        }
    ]

    assert decision(monitor_api, row_lcr("INSERT", "HR", "DEPARTMENTS"), positive="EMPTY_SET") == (
        "DISCARD"
    )


def test_a_rule_without_a_context_is_evaluated_in_its_sets_context(
    admin_api, admin_user, monitor_api
):
    ctx = services.evaluation_context_create(
        user=admin_user,
        name="ORDER_CTX",
        variables=[{"name": "ORD", "variable_type": "USER", "user_type": "APP.ORDER"}],
    )
    rs = services.rule_set_create(user=admin_user, name="ORDERS_RS", evaluation_context=ctx)
    services.rule_create(user=admin_user, name="BIG_ORDER", condition=":ord.amount > 100")
    services.rule_set_add_rule(
        user=admin_user, rule_set=rs, rule=Rule.objects.get(name="BIG_ORDER")
    )

    assert decision(monitor_api, user_message("APP.ORDER", amount=500), positive="ORDERS_RS") == (
        "PERFORM"
    )
    assert decision(monitor_api, user_message("APP.ORDER", amount=5), positive="ORDERS_RS") == (
        "DISCARD"
    )
    # The set's context types :ord as APP.ORDER: the rule does not apply to other messages.
    assert decision(monitor_api, user_message("APP.OTHER", amount=500), positive="ORDERS_RS") == (
        "DISCARD"
    )
