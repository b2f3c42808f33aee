"""``evaluate``, ``test`` and ``decide`` through the API: a rule's TRUE / FALSE / NULL for a
message, and Table 5-1 (spec/rules.md §7.4 D1 to D16) with the seed's sets N = {G9} and P = {G5}.
Nothing is written by any of them."""

from __future__ import annotations

import pytest

from rules import services
from tests.rules.helpers import ddl_lcr, row_lcr, user_message
from tests.rules.lang_seed import G2, G5, G10, G15

DECIDE = "/api/rule-sets/decide/"

DEPARTMENTS = row_lcr("INSERT", "HR", "DEPARTMENTS")
JOB_HISTORY = row_lcr("INSERT", "HR", "JOB_HISTORY")
OE_X = row_lcr("INSERT", "OE", "X")

# (case, negative set, positive set, message, decision); None is "no rule set".
TABLE_5_1 = [
    ("D1", None, None, OE_X, "PERFORM"),
    ("D2", None, "P", DEPARTMENTS, "PERFORM"),
    ("D3", None, "P", OE_X, "DISCARD"),
    ("D4", "N", None, JOB_HISTORY, "DISCARD"),
    ("D5", "N", None, DEPARTMENTS, "PERFORM"),
    ("D6", "N", "P", JOB_HISTORY, "DISCARD"),
    ("D7 insert", "N", "P", DEPARTMENTS, "PERFORM"),
    ("D7 update", "N", "P", row_lcr("UPDATE", "HR", "EMPLOYEES"), "PERFORM"),
    ("D7 delete", "N", "P", row_lcr("DELETE", "HR", "COUNTRIES"), "PERFORM"),
    ("D8", "EMPTY", None, OE_X, "PERFORM"),
    ("D9", "EMPTY", "P", DEPARTMENTS, "PERFORM"),
    ("D10", None, "EMPTY", DEPARTMENTS, "DISCARD"),
    ("D11", "EMPTY", "EMPTY", DEPARTMENTS, "DISCARD"),
    ("D12", "N", "EMPTY", DEPARTMENTS, "DISCARD"),
    ("D13", "N", "P", row_lcr("INSERT", "HR", "JOB_HISTORY", tag="01"), "DISCARD"),
    ("D14", "N", "P", row_lcr("INSERT", "HR", "DEPARTMENTS", tag="01"), "DISCARD"),
    ("D15", "N", "P", row_lcr("INSERT", "HR", "JOB_HISTORY", src="DBS2.EXAMPLE.COM"), "DISCARD"),
]


def _name(seed_sets, key: str | None) -> str | None:
    return None if key is None else seed_sets[key].name


@pytest.mark.parametrize(
    ("negative", "positive", "message", "decision"),
    [case[1:] for case in TABLE_5_1],
    ids=[case[0] for case in TABLE_5_1],
)
def test_decide_follows_table_5_1(
    monitor_api, seed_sets, rules_snapshot, negative, positive, message, decision
):
    before = rules_snapshot()

    got = monitor_api.post(
        DECIDE,
        {
            "message": message,
            "positive": _name(seed_sets, positive),
            "negative": _name(seed_sets, negative),
        },
    )

    assert got.status_code == 200, got.json()
    assert got.json()["decision"] == decision
    assert got.json()["reason"]
    before.assert_unchanged()


def test_decide_shows_every_rules_value_in_both_sets(monitor_api, seed_sets):
    got = monitor_api.post(
        DECIDE,
        {
            "message": row_lcr("INSERT", "HR", "JOB_HISTORY", src="DBS2.EXAMPLE.COM"),
            "positive": "P_SET",
            "negative": "N_SET",
        },
    ).json()

    assert got["negative"] == [{"rule": "JOB_HISTORY_NEG", "result": "FALSE"}]
    assert got["positive"] == [{"rule": "HR_SCHEMA_POS", "result": "FALSE"}]


def test_decide_without_rule_sets_lists_none(monitor_api, seed_sets):
    got = monitor_api.post(DECIDE, {"message": OE_X, "positive": None, "negative": None}).json()

    assert (got["decision"], got["positive"], got["negative"]) == ("PERFORM", None, None)


def test_d16_one_true_rule_in_a_positive_set_is_enough(monitor_api, admin_user, seed_sets):
    """OR semantics: R1 TRUE and R2 FALSE in one positive set perform."""
    services.rule_create(
        user=admin_user, name="R2_OE_ONLY", condition=":dml.get_object_owner() = 'OE'"
    )
    from rules.models import Rule

    services.rule_set_add_rule(
        user=admin_user, rule_set=seed_sets["P"], rule=Rule.objects.get(name="R2_OE_ONLY")
    )

    got = monitor_api.post(
        DECIDE, {"message": DEPARTMENTS, "positive": "P_SET", "negative": None}
    ).json()

    assert got["decision"] == "PERFORM"
    assert sorted((r["rule"], r["result"]) for r in got["positive"]) == [
        ("HR_SCHEMA_POS", "TRUE"),
        ("R2_OE_ONLY", "FALSE"),
    ]


def test_a_rule_set_test_uses_it_as_the_positive_set_after_an_optional_negative_one(
    monitor_api, seed_sets, rules_snapshot
):
    before = rules_snapshot()

    alone = monitor_api.post("/api/rule-sets/P_SET/test/", {"message": JOB_HISTORY})
    after_negative = monitor_api.post(
        "/api/rule-sets/P_SET/test/", {"message": JOB_HISTORY, "negative_rule_set": "N_SET"}
    )

    assert alone.status_code == after_negative.status_code == 200
    assert alone.json()["decision"] == "PERFORM"
    assert alone.json()["negative"] is None
    assert alone.json()["positive"] == [{"rule": "HR_SCHEMA_POS", "result": "TRUE"}]
    assert after_negative.json()["decision"] == "DISCARD"
    assert after_negative.json()["negative"] == [{"rule": "JOB_HISTORY_NEG", "result": "TRUE"}]
    before.assert_unchanged()


def test_an_empty_rule_set_tested_alone_discards(monitor_api, seed_sets):
    got = monitor_api.post("/api/rule-sets/EMPTY_SET/test/", {"message": DEPARTMENTS}).json()

    assert (got["decision"], got["positive"]) == ("DISCARD", [])


@pytest.mark.parametrize(
    ("condition", "message", "result", "applies"),
    [
        (G5, row_lcr("INSERT", "HR", "COUNTRIES"), "TRUE", True),  # E7
        (G5, row_lcr("INSERT", "OE", "INVENTORIES"), "FALSE", True),  # E9
        (G5, row_lcr("INSERT", "HR", "COUNTRIES", tag="01"), "FALSE", True),  # E11
        (G2, row_lcr("INSERT", "HR", "COUNTRIES"), "NULL", False),  # E6: :ddl unbound
        (G2, ddl_lcr("CREATE", "TABLE", "HR", "CANDIDATES"), "TRUE", True),  # E3
        (G10, row_lcr("UPDATE", "HR", "DEPARTMENTS", tag="02"), "TRUE", True),  # E35
        (G10, row_lcr("UPDATE", "HR", "DEPARTMENTS"), "NULL", True),  # E36
        (G10, row_lcr("UPDATE", "HR", "DEPARTMENTS", tag="01"), "FALSE", True),  # E37
    ],
    ids=["E7", "E9", "E11", "E6", "E3", "E35", "E36", "E37"],
)
def test_evaluate_answers_true_false_or_null(
    monitor_api, admin_user, streams_context, condition, message, result, applies
):
    services.rule_create(
        user=admin_user, name="UNDER_TEST", condition=condition, evaluation_context=streams_context
    )

    got = monitor_api.post("/api/rules/UNDER_TEST/evaluate/", {"message": message})

    assert got.status_code == 200, got.json()
    assert got.json() == {"rule": "UNDER_TEST", "result": result, "applies": applies}


def test_evaluate_a_generated_message_rule(monitor_api, admin_api):
    [rule] = admin_api.post(
        "/api/rules/generate/",
        {
            "kind": "message",
            "message_type": "strmadmin.region_pri_msg",
            "rule_condition": ":msg.region = 'EUROPE' AND :msg.priority = '1'",
        },
    ).json()
    assert rule["condition"] == G15.replace("VAR$_52", rule["message_rule_variable"])
    url = f"/api/rules/{rule['name']}/evaluate/"

    def result(region, priority, type_name="STRMADMIN.REGION_PRI_MSG"):  # type: ignore[no-untyped-def]
        message = user_message(type_name, region=region, priority=priority)
        return monitor_api.post(url, {"message": message}).json()["result"]

    assert result("EUROPE", 1) == "TRUE"  # E26: NUMBER 1 = '1'
    assert result("EUROPE", 2) == "FALSE"  # E27
    assert result(None, 1) == "NULL"  # E28
    assert result("EUROPE", 1, type_name="STRMADMIN.OTHER_MSG") == "NULL"  # not its type


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"kind": "row_lcr", "object_owner": "HR"}, "message.command_type"),
        ({**DEPARTMENTS, "tag": "xyz"}, "message.tag"),
        ({"kind": "carrier_pigeon"}, "message.kind"),
        ("not json at all {", "message"),
        ([1, 2], "message"),
    ],
)
def test_a_bad_message_is_a_400_naming_the_field(monitor_api, seed_sets, message, field):
    for url, body in (
        (DECIDE, {"message": message, "positive": "P_SET", "negative": None}),
        ("/api/rule-sets/P_SET/test/", {"message": message}),
        ("/api/rules/HR_SCHEMA_POS/evaluate/", {"message": message}),
    ):
        got = monitor_api.post(url, body)
        assert got.status_code == 400, (url, got.json())
        assert field in got.json(), (url, got.json())


def test_an_unknown_rule_set_name_is_a_400_naming_it(monitor_api, seed_sets):
    got = monitor_api.post(DECIDE, {"message": OE_X, "positive": "NOPE", "negative": None})
    missing = monitor_api.post(DECIDE, {"message": OE_X})

    assert got.status_code == 400
    assert "positive" in got.json()
    assert missing.status_code == 400
    assert {"positive", "negative"} <= set(missing.json())
