"""Rules through the API: create (classified simple or complex), read by id or name, change,
drop; a rule held by a rule set cannot be dropped (DROP_RULE without force)."""

from __future__ import annotations

from rules import services
from rules.models import Rule
from tests.rules.lang_seed import G5, G9

URL = "/api/rules/"


def test_an_administrator_creates_reads_changes_and_drops_a_rule(admin_api, streams_context):
    created = admin_api.post(
        URL,
        {
            "name": "HR_ROWS",
            "condition": G5,
            "evaluation_context": "STREAMS$_EVALUATION_CONTEXT",
            "action_context": {"route": "hr"},
            "comment": "rows of HR",
        },
    )

    assert created.status_code == 201, created.json()
    data = created.json()
    assert (data["name"], data["condition"], data["classification"]) == ("HR_ROWS", G5, "simple")
    assert data["evaluation_context"] == "STREAMS$_EVALUATION_CONTEXT"
    assert data["action_context"] == {"route": "hr"}
    assert data["owner"] == "alice"
    assert data["streams_rule_type"] == ""  # made by hand, not by a generator
    assert admin_api.get(f"{URL}hr_rows/").json()["id"] == data["id"]

    changed = admin_api.patch(
        f"{URL}HR_ROWS/",
        {"condition": "NOT (:dml.get_object_owner() = 'HR')", "comment": "not HR"},
    )

    assert changed.status_code == 200, changed.json()
    assert changed.json()["classification"] == "complex"  # NOT makes a condition complex
    rule = Rule.objects.get(name="HR_ROWS")
    assert (rule.condition, rule.comment) == ("NOT (:dml.get_object_owner() = 'HR')", "not HR")

    assert admin_api.delete(f"{URL}HR_ROWS/").status_code == 204
    assert not Rule.objects.filter(name="HR_ROWS").exists()


def test_a_rule_without_an_evaluation_context_knows_the_standard_variables(admin_api):
    created = admin_api.post(URL, {"name": "PLAIN", "condition": ":dml.get_object_name() = 'X'"})

    assert created.status_code == 201, created.json()
    assert created.json()["evaluation_context"] is None


def test_a_rule_in_a_rule_set_cannot_be_dropped(admin_api, seed_sets, rules_snapshot):
    before = rules_snapshot()

    refused = admin_api.delete(f"{URL}JOB_HISTORY_NEG/")

    assert refused.status_code == 409
    assert "N_SET" in refused.json()["detail"]
    before.assert_unchanged()


def test_a_rule_can_be_dropped_once_removed_from_its_rule_set(admin_api, seed_sets):
    removed = admin_api.post("/api/rule-sets/N_SET/remove_rule/", {"rule": "JOB_HISTORY_NEG"})
    assert removed.status_code == 200, removed.json()

    assert admin_api.delete(f"{URL}JOB_HISTORY_NEG/").status_code == 204
    assert not Rule.objects.filter(name="JOB_HISTORY_NEG").exists()


def test_a_second_rule_of_the_same_name_is_a_conflict_on_name(admin_api, admin_user):
    services.rule_create(user=admin_user, name="TWICE", condition=G9)

    refused = admin_api.post(URL, {"name": "twice", "condition": G9})

    assert refused.status_code == 409
    assert "name" in refused.json()


def test_a_changed_rule_keeps_its_name_and_generator_metadata(admin_api, admin_user):
    services.rule_create(user=admin_user, name="KEEP_NAME", condition=G9)

    refused = admin_api.patch(f"{URL}KEEP_NAME/", {"name": "OTHER"})

    # The name is not among the editable fields, so it is ignored rather than applied.
    assert refused.status_code == 200
    assert Rule.objects.filter(name="KEEP_NAME").exists()
    assert not Rule.objects.filter(name="OTHER").exists()


def test_the_rule_list_filters_by_search_and_rule_set(admin_api, seed_sets):
    by_search = admin_api.get(URL, {"q": "JOB_HISTORY"}).json()["results"]
    by_set = admin_api.get(URL, {"rule_set": seed_sets["P"].pk}).json()["results"]

    assert [r["name"] for r in by_search] == ["JOB_HISTORY_NEG"]
    assert [r["name"] for r in by_set] == ["HR_SCHEMA_POS"]
    assert by_set[0]["rule_sets"] == ["P_SET"]
