"""The rules pages in Debian's chromium.

Scenario: log in as an administrator, create a rule through the form while the HTMX condition
check shows the error of a half-typed condition (with its column) and "Valid · simple" once it is
complete; create a rule set, add the rule, paste a row change record into "Test a message" and
see PERFORM with the rule TRUE, then a DISCARD with the rule FALSE.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit, nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HALF_TYPED = ":dml.get_object_owner() = "
COMPLETE = ":dml.get_object_owner() = 'HR' and :dml.is_null_tag() = 'Y'"


def row_lcr(owner: str, name: str) -> str:
    return json.dumps(
        {
            "kind": "row_lcr",
            "source_database_name": "DBS1.EXAMPLE.COM",
            "command_type": "INSERT",
            "object_owner": owner,
            "object_name": name,
            "tag": None,
            "new_values": {"DEPARTMENT_ID": 280},
        },
        indent=2,
    )


def test_admin_writes_a_rule_puts_it_in_a_set_and_tests_messages(
    page, live_server, login, admin_user, page_problems
):
    from rules import services
    from rules.models import Rule, RuleSet

    services.streams_evaluation_context()  # a transactional test's flush removes migration data
    login(page, "alice", "pw-alice")

    # A rule through its form, the condition checked as it is typed.
    nav(page, "Rules", "Rules")
    expect(page.get_by_role("heading", name="Rules")).to_be_visible()
    page.get_by_role("link", name="Add", exact=True).click()
    expect(page.get_by_role("heading", name="New rule")).to_be_visible()
    # A new rule is about queued messages unless told otherwise (issue 16): this one is about
    # row changes, so it takes the Streams context.
    expect(page.get_by_label("Evaluation context")).to_have_value(
        str(services.aq_message_evaluation_context().pk)
    )
    page.get_by_label("Evaluation context").select_option(label="STREAMS$_EVALUATION_CONTEXT")
    page.get_by_label("Name").fill("HR_ROWS")
    condition = page.get_by_label("Condition")
    condition.press_sequentially(HALF_TYPED)
    check = page.locator("#condition-check")
    expect(check.locator('[data-valid="false"]')).to_contain_text("line 1, column 27")
    expect(check.locator('[data-valid="false"]')).to_have_attribute("data-column", "27")
    shot(page, "rules-01-rule-form-half-typed")
    condition.press_sequentially("'HR' and :dml.is_null_tag() = 'Y'")
    expect(check.locator('[data-valid="true"]')).to_contain_text("Valid · simple")
    expect(condition).to_have_value(COMPLETE)
    page.get_by_label("Comment").fill("made in a browser")
    shot(page, "rules-02-rule-form-valid")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rule HR_ROWS")).to_be_visible()
    expect(page.locator("#rule-condition")).to_have_text(COMPLETE)
    rule = Rule.objects.get(name="HR_ROWS")
    assert (rule.condition, rule.classification) == (COMPLETE, "simple")
    shot(page, "rules-03-rule-detail")

    # A rule set, then the rule added to it.
    nav(page, "Rules", "Rule sets")
    expect(page.get_by_role("heading", name="Rule sets")).to_be_visible()
    page.get_by_role("link", name="Add", exact=True).click()
    expect(page.get_by_role("heading", name="New rule set")).to_be_visible()
    page.get_by_label("Name").fill("APPLY_HR")
    page.get_by_label("Evaluation context").select_option(label="STREAMS$_EVALUATION_CONTEXT")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rule set APPLY_HR")).to_be_visible()
    expect(page.locator("#ruleset-members")).to_contain_text("No rules")
    page.get_by_role("link", name="Add rule").click()
    page.get_by_label("Rule", exact=True).select_option(label="HR_ROWS")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rule set APPLY_HR")).to_be_visible()
    members = page.locator("#ruleset-members tbody tr")
    expect(members).to_have_count(1)
    expect(members).to_contain_text("HR_ROWS")
    assert list(RuleSet.objects.get(name="APPLY_HR").rules.values_list("name", flat=True)) == [
        "HR_ROWS"
    ]

    # Test a message: a row change in HR is performed, the rule TRUE.
    panel = page.locator("#test-panel")
    panel.get_by_label("Message").fill(row_lcr("HR", "DEPARTMENTS"))
    htmx_submit(page, panel.get_by_role("button", name="Evaluate"), "/test/")
    expect(page.locator("#test-decision")).to_have_text("PERFORM")
    rule_row = page.locator("#test-rules tr").filter(has_text="HR_ROWS")
    expect(rule_row.locator("[data-result]")).to_have_text("TRUE")
    # The form stays filled in for the next try (the same JSON, written on one line).
    kept = page.locator("#test-panel").get_by_label("Message").input_value()
    assert json.loads(kept) == json.loads(row_lcr("HR", "DEPARTMENTS"))
    shot(page, "rules-04-ruleset-test-perform")

    # ... and a row change in another schema is discarded, the rule FALSE.
    panel = page.locator("#test-panel")
    panel.get_by_label("Message").fill(row_lcr("OE", "ORDERS"))
    htmx_submit(page, panel.get_by_role("button", name="Evaluate"), "/test/")
    expect(page.locator("#test-decision")).to_have_text("DISCARD")
    rule_row = page.locator("#test-rules tr").filter(has_text="HR_ROWS")
    expect(rule_row.locator("[data-result]")).to_have_text("FALSE")
    shot(page, "rules-05-ruleset-test-discard")

    # Bad JSON comes back on the message field, in place.
    panel = page.locator("#test-panel")
    panel.get_by_label("Message").fill('{"kind": "row_lcr", "object_owner": "HR"')
    htmx_submit(page, panel.get_by_role("button", name="Evaluate"), "/test/")
    expect(page.locator('#test-panel [data-field="message"]')).to_be_visible()
    expect(page.locator("#test-decision")).to_have_count(0)
    shot(page, "rules-06-ruleset-test-bad-json")

    # The lists and the status view show what was made.
    nav(page, "Rules", "Rules")
    expect(page.locator("#object-table")).to_contain_text("HR_ROWS")
    shot(page, "rules-07-rule-list")
    nav(page, "Rules", "Rule sets")
    expect(page.locator("#object-table")).to_contain_text("APPLY_HR")
    shot(page, "rules-08-ruleset-list")
    nav(page, "Rules", "Contexts")
    expect(page.locator("#object-table")).to_contain_text("STREAMS$_EVALUATION_CONTEXT")
    shot(page, "rules-09-context-list")
    page.goto(f"{live_server.url}/status/?view=dba_rule_set_rules")
    expect(page.locator("table")).to_contain_text("APPLY_HR")
    shot(page, "rules-10-status-dba-rule-set-rules")
    page_problems.assert_none()


def test_a_rule_form_with_a_bad_condition_comes_back_with_its_position(
    page, live_server, login, admin_user, page_problems
):
    from rules import services
    from rules.models import Rule

    services.streams_evaluation_context()
    login(page, "alice", "pw-alice")
    page.goto(f"{live_server.url}/rules/add/")
    page.get_by_label("Evaluation context").select_option(label="STREAMS$_EVALUATION_CONTEXT")
    page.get_by_label("Name").fill("BROKEN")
    page.get_by_label("Condition").fill(":dml.get_object_owner() = 'HR' and")
    page.get_by_role("button", name="Save").click()

    error = page.locator('[data-field="condition"]')
    expect(error).to_contain_text("line 1, column 35")
    # The live check does not repeat the field's error; it speaks again once the user types.
    check = page.locator("#condition-check")
    expect(check).to_have_text("")
    shot(page, "rules-11-rule-form-error")
    assert not Rule.objects.filter(name="BROKEN").exists()
    page.get_by_label("Condition").press("Control+End")
    page.get_by_label("Condition").press_sequentially(" :dml.is_null_tag() = 'Y'")
    expect(check.locator('[data-valid="true"]')).to_contain_text("Valid · simple")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rule BROKEN")).to_be_visible()
    page_problems.assert_none()
