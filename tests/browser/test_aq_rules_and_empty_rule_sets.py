"""Issue 16, defect 4 in Debian's chromium: a new rule takes the AQ message context by default,
so the condition the queue page suggests (:msg.x = 1) saves as it is; a rule set has an edit
page; a propagation with an empty positive rule set says, on its page, that it moves nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_msg_rule_saves_with_the_defaults_a_rule_set_is_edited_and_an_empty_set_warns(
    page, live_server, login, admin_user, page_problems
):
    from jobs import services as js
    from queues import services as qs
    from rules import services as rs
    from rules.models import Rule, RuleSet

    rs.streams_evaluation_context()  # a transactional test's flush removes migration data
    login(page, "alice", "pw-alice")

    page.goto(f"{live_server.url}/rules/add/")
    page.get_by_label("Name").fill("MSG_X")
    page.get_by_label("Condition").press_sequentially(":msg.x = 1")
    expect(page.locator('#condition-check [data-valid="true"]')).to_be_visible()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rule MSG_X")).to_be_visible()
    assert Rule.objects.get(name="MSG_X").evaluation_context.name == (
        "AQ$_MESSAGE_EVALUATION_CONTEXT"
    )

    empty = rs.rule_set_create(user=admin_user, name="RS_EMPTY")
    page.goto(f"{live_server.url}{empty.get_absolute_url()}")
    page.get_by_role("link", name="Edit", exact=True).click()
    page.get_by_label("Evaluation context").select_option(label="AQ$_MESSAGE_EVALUATION_CONTEXT")
    page.get_by_label("Comment").fill("routes orders")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rule set RS_EMPTY")).to_be_visible()
    expect(page.get_by_text("routes orders")).to_be_visible()
    empty = RuleSet.objects.get(pk=empty.pk)
    assert (empty.comment, empty.evaluation_context.name) == (
        "routes orders",
        "AQ$_MESSAGE_EVALUATION_CONTEXT",
    )

    mc = qs.queue_table_create(
        user=admin_user, name="QT_MC", sort_order="enq_time", multiple_consumers=True
    )
    sc = qs.queue_table_create(user=admin_user, name="QT_SC", sort_order="enq_time")
    prop = js.propagation_create(
        user=admin_user,
        name="P_EMPTY",
        source_queue=qs.queue_create(user=admin_user, name="SRC", queue_table=mc),
        destination_queue=qs.queue_create(user=admin_user, name="DST", queue_table=sc),
        positive_rule_set=empty,
        schedule=False,
    )
    page.goto(f"{live_server.url}{prop.get_absolute_url()}")
    warning = page.locator('[data-warning="propagation"]')
    expect(warning).to_contain_text("Positive rule set RS_EMPTY is empty")
    expect(warning).to_contain_text("discards all messages")
    page_problems.assert_none()
