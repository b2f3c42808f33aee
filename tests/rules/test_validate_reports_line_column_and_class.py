"""``POST /api/rules/validate/`` checks a condition without saving: valid and simple or complex,
or the error with its line, column and what was expected."""

from __future__ import annotations

from tests.rules.lang_seed import G5, G8, G12_SUBSET_INSERT

URL = "/api/rules/validate/"


def test_a_valid_simple_condition(admin_api, streams_context, rules_snapshot):
    before = rules_snapshot()

    got = admin_api.post(
        URL, {"condition": G5, "evaluation_context": "STREAMS$_EVALUATION_CONTEXT"}
    )

    assert got.status_code == 200
    assert got.json() == {
        "valid": True,
        "classification": "simple",
        "error": None,
        "line": None,
        "column": None,
        "expected": None,
    }
    before.assert_unchanged()


def test_seed_conditions_are_classified(admin_api, streams_context):
    def classification(condition: str) -> str:
        return admin_api.post(URL, {"condition": condition}).json()["classification"]

    assert classification(G8) == "simple"
    assert classification(G12_SUBSET_INSERT) == "complex"  # NOT, get_value(...) with arguments


def test_a_syntax_error_names_line_column_and_what_was_expected(admin_api):
    got = admin_api.post(
        URL, {"condition": ":dml.get_object_owner() = 'HR'\nAND (:dml.get_object_name() = 1"}
    )

    assert got.status_code == 200
    report = got.json()
    assert report["valid"] is False
    assert report["classification"] is None
    assert report["line"] == 2
    assert report["column"] == 32
    assert report["expected"] == "')'"
    assert report["error"].startswith("line 2, column 32:")


def test_an_unknown_variable_of_the_context_is_reported(admin_api, streams_context):
    got = admin_api.post(
        URL,
        {"condition": "  :msg.region = 'EU'", "evaluation_context": "STREAMS$_EVALUATION_CONTEXT"},
    ).json()

    assert got["valid"] is False
    assert (got["line"], got["column"]) == (1, 3)
    assert ":msg" in got["error"].lower()


def test_an_empty_condition_is_reported_invalid(admin_api):
    got = admin_api.post(URL, {"condition": ""}).json()

    assert got["valid"] is False
    assert "condition" in got["error"]


def test_an_unknown_evaluation_context_is_a_400_naming_it(admin_api):
    got = admin_api.post(URL, {"condition": G5, "evaluation_context": "NO_SUCH_CTX"})

    assert got.status_code == 400
    assert "evaluation_context" in got.json()


def test_a_missing_condition_is_a_400_naming_it(admin_api):
    got = admin_api.post(URL, {})

    assert got.status_code == 400
    assert "condition" in got.json()
