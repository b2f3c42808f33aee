"""``POST /api/rules/generate/``: the DBMS_STREAMS_ADM generators through the API. The conditions
are the seed's byte for byte (spec/rules.md §7.4 G1 to G15), the rule sets are created when absent,
``inclusion_rule`` false puts rules in the negative set, and ``dry_run`` saves nothing."""

from __future__ import annotations

import pytest

from rules.models import EvaluationContext, Rule, RuleSet
from tests.rules.lang_seed import (
    G1,
    G3,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12_SUBSET_INSERT,
    G13_SUBSET_UPDATE,
    G14_SUBSET_DELETE,
    G15,
    SCHEMA_HR_DML,
)

URL = "/api/rules/generate/"
SRC = "dbs1.example.com"


def generate(api, **body):  # type: ignore[no-untyped-def]
    response = api.post(URL, body)
    assert response.status_code == 201, response.json()
    return response.json()


def members(name: str) -> list[str]:
    return sorted(RuleSet.objects.get(name=name).rules.values_list("condition", flat=True))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"kind": "global", "include_tagged_lcr": False}, [G1]),
        ({"kind": "global", "include_tagged_lcr": True}, [G3]),
        (
            {
                "kind": "schema",
                "schema_name": "hr",
                "include_dml": False,
                "include_ddl": True,
                "source_database": SRC,
            },
            [G6],
        ),
        ({"kind": "table", "table_name": "hr.locations", "source_database": SRC}, [G7]),
        (
            {
                "kind": "table",
                "table_name": "hr.countries",
                "include_dml": False,
                "include_ddl": True,
                "source_database": SRC,
            },
            [G8],
        ),
        (
            {
                "kind": "table",
                "table_name": "hr.departments",
                "include_ddl": True,
                "include_tagged_lcr": True,
                "source_database": SRC,
                "and_condition": ":lcr.get_tag() = HEXTORAW('02')",
            },
            [G10, G11],
        ),
    ],
    ids=["G1", "G3", "G6", "G7", "G8", "G10-G11"],
)
def test_generated_conditions_are_the_seeds_and_land_in_a_new_positive_set(
    admin_api, streams_context, body, expected
):
    rules = generate(admin_api, rule_set="APPLY_RS", **body)

    assert [r["condition"] for r in rules] == expected
    for r in rules:
        assert r["evaluation_context"] == "STREAMS$_EVALUATION_CONTEXT"
        assert r["rule_sets"] == ["APPLY_RS"]
        assert r["streams_rule_type"] == body["kind"].upper()
        assert r["original_condition"] == r["condition"]
    assert members("APPLY_RS") == sorted(expected)
    assert RuleSet.objects.get(name="APPLY_RS").evaluation_context == streams_context


def test_generated_rules_are_named_after_their_object_and_carry_oracles_metadata(admin_api):
    [rule] = generate(admin_api, kind="table", table_name="hr.locations", source_database=SRC)

    assert rule["name"].startswith("LOCATIONS")
    assert rule["name"][len("LOCATIONS") :].isdigit()
    assert {
        k: rule[k] for k in ("streams_rule_type", "rule_type", "schema_name", "object_name")
    } == {
        "streams_rule_type": "TABLE",
        "rule_type": "DML",
        "schema_name": "HR",
        "object_name": "LOCATIONS",
    }
    assert (rule["source_database"], rule["include_tagged_lcr"]) == ("DBS1.EXAMPLE.COM", False)
    # No rule set named: the default positive set is created.
    assert rule["rule_sets"] == ["POSITIVE_RULES"]


def test_a_second_generation_reuses_the_rule_set_and_picks_a_new_name(admin_api):
    first = generate(admin_api, kind="table", table_name="hr.locations", rule_set="RS")
    second = generate(admin_api, kind="table", table_name="hr.locations", rule_set="rs")

    assert first[0]["name"] != second[0]["name"]
    assert RuleSet.objects.filter(name__iexact="RS").count() == 1
    assert RuleSet.objects.get(name="RS").rules.count() == 2


def test_inclusion_rule_false_puts_the_rule_in_the_negative_set(admin_api):
    [rule] = generate(
        admin_api,
        kind="table",
        table_name="hr.job_history",
        include_tagged_lcr=True,
        source_database=SRC,
        inclusion_rule=False,
        rule_set="APPLY_POS",
        negative_rule_set="APPLY_NEG",
    )

    assert rule["condition"] == G9
    assert rule["rule_sets"] == ["APPLY_NEG"]
    assert not RuleSet.objects.filter(name="APPLY_POS").exists()
    assert members("APPLY_NEG") == [G9]


def test_negative_rules_without_a_named_set_go_to_the_default_negative_set(admin_api):
    [rule] = generate(admin_api, kind="schema", schema_name="oe", inclusion_rule=False)

    assert rule["rule_sets"] == ["NEGATIVE_RULES"]


def test_subset_rules_come_as_three_with_row_migration(admin_api):
    rules = generate(
        admin_api,
        kind="subset",
        table_name="hr.regions",
        dml_condition="region_id=2",
        source_database=SRC,
        rule_set="SUBSET_RS",
    )

    assert [r["condition"] for r in rules] == [
        G12_SUBSET_INSERT,
        G13_SUBSET_UPDATE,
        G14_SUBSET_DELETE,
    ]
    assert [r["subsetting_operation"] for r in rules] == ["INSERT", "UPDATE", "DELETE"]
    assert {r["dml_condition"] for r in rules} == {"region_id=2"}
    # get_value('NEW', ...) takes arguments, so no subset condition is indexable.
    assert {r["classification"] for r in rules} == {"complex"}
    # The INSERT and DELETE rules carry their row-migration operation in the action context.
    assert all(r["action_context"] for r in (rules[0], rules[2]))
    assert members("SUBSET_RS") == sorted(r["condition"] for r in rules)


def test_subset_rules_in_a_negative_set_are_refused(admin_api, rules_snapshot):
    """D17: the procedures cannot do it, and the seed calls the result unpredictable."""
    before = rules_snapshot()

    refused = admin_api.post(
        URL,
        {
            "kind": "subset",
            "table_name": "hr.regions",
            "dml_condition": "region_id=2",
            "inclusion_rule": False,
        },
    )

    assert refused.status_code == 400
    assert "positive" in refused.json()["inclusion_rule"][0]
    before.assert_unchanged()


def test_a_message_rule_gets_a_var_n_variable_and_its_own_evaluation_context(admin_api):
    [rule] = generate(
        admin_api,
        kind="message",
        message_type="strmadmin.region_pri_msg",
        rule_condition=":msg.region = 'EUROPE' AND :msg.priority = '1' ",
        rule_set="MSG_RS",
    )

    var = rule["message_rule_variable"]
    assert var.startswith("VAR$_") and var[len("VAR$_") :].isdigit()
    assert rule["condition"] == G15.replace("VAR$_52", var)
    assert (rule["streams_rule_type"], rule["message_type"]) == (
        "MESSAGE",
        "STRMADMIN.REGION_PRI_MSG",
    )
    ctx = EvaluationContext.objects.get(name=rule["evaluation_context"])
    assert ctx.name != "STREAMS$_EVALUATION_CONTEXT"
    assert list(ctx.variables.values_list("name", "variable_type", "user_type")) == [
        (var, "USER", "STRMADMIN.REGION_PRI_MSG")
    ]
    # The rule set of message rules has no evaluation context of its own (each rule has one).
    assert RuleSet.objects.get(name="MSG_RS").evaluation_context is None


def test_two_message_rules_get_different_variables(admin_api):
    body = {"kind": "message", "message_type": "app.t", "rule_condition": ":msg.a = 1"}
    [one] = generate(admin_api, **body)
    [two] = generate(admin_api, **body)

    assert one["message_rule_variable"] != two["message_rule_variable"]
    assert one["evaluation_context"] != two["evaluation_context"]


def test_exclude_table_is_one_action_with_a_positive_and_a_negative_rule(admin_api):
    rules = generate(
        admin_api,
        kind="exclude_table",
        table_name="hr.job_history",
        source_database=SRC,
        rule_set="HR_POS",
        negative_rule_set="HR_NEG",
    )

    by_set = {r["rule_sets"][0]: r for r in rules}
    assert set(by_set) == {"HR_POS", "HR_NEG"}
    assert by_set["HR_POS"]["condition"] == SCHEMA_HR_DML
    assert by_set["HR_NEG"]["condition"] == G9  # tagged LCRs of the table are discarded too
    assert by_set["HR_NEG"]["include_tagged_lcr"] is True


def test_dry_run_returns_the_conditions_and_saves_nothing(admin_api, rules_snapshot):
    before = rules_snapshot()

    got = admin_api.post(
        URL,
        {
            "kind": "exclude_table",
            "table_name": "hr.job_history",
            "source_database": SRC,
            "dry_run": True,
        },
    )

    assert got.status_code == 200
    assert got.json() == [
        {
            "condition": SCHEMA_HR_DML,
            "streams_rule_type": "SCHEMA",
            "rule_type": "DML",
            "subsetting_operation": "",
            "rule_set_type": "POSITIVE",
        },
        {
            "condition": G9,
            "streams_rule_type": "TABLE",
            "rule_type": "DML",
            "subsetting_operation": "",
            "rule_set_type": "NEGATIVE",
        },
    ]
    before.assert_unchanged()
    assert not Rule.objects.exists()


def test_dry_run_of_a_message_rule_saves_no_evaluation_context(admin_api, rules_snapshot):
    before = rules_snapshot()

    got = admin_api.post(
        URL,
        {
            "kind": "message",
            "message_type": "app.t",
            "rule_condition": ":msg.a = 1",
            "dry_run": True,
        },
    )

    assert got.status_code == 200
    [preview] = got.json()
    assert preview["streams_rule_type"] == "MESSAGE"
    assert '"VAR$_' in preview["condition"]
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "table", "table_name": "locations"}, "table_name"),
        ({"kind": "table"}, "table_name"),
        ({"kind": "schema", "schema_name": " "}, "schema_name"),
        ({"kind": "subset", "table_name": "hr.regions"}, "dml_condition"),
        (
            {"kind": "subset", "table_name": "hr.regions", "dml_condition": "region_id = "},
            "dml_condition",
        ),
        (
            {"kind": "message", "message_type": "app.t", "rule_condition": ":dml.x() = 1"},
            "rule_condition",
        ),
        (
            {"kind": "table", "table_name": "hr.t", "and_condition": ":lcr.get_tag( = 1"},
            "and_condition",
        ),
        (
            {
                "kind": "subset",
                "table_name": "hr.regions",
                "dml_condition": "region_id=2",
                "include_ddl": True,
            },
            "include_ddl",
        ),
        ({"kind": "global", "table_name": "hr.t"}, "table_name"),
        (
            {
                "kind": "message",
                "message_type": "app.t",
                "rule_condition": ":msg.a = 1",
                "source_database": "x",
            },
            "source_database",
        ),
        ({"kind": "everything"}, "kind"),
    ],
)
def test_bad_generator_input_is_a_400_naming_the_parameter(admin_api, rules_snapshot, body, field):
    before = rules_snapshot()

    for dry_run in (False, True):
        refused = admin_api.post(URL, {**body, "dry_run": dry_run})
        assert refused.status_code == 400, (dry_run, refused.json())
        assert field in refused.json(), (dry_run, refused.json())
    before.assert_unchanged()
