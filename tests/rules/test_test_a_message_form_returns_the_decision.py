""" "Test a message" on a rule set's page: the HTMX form returns a fragment with each rule's
TRUE / FALSE / NULL and the decision; bad input comes back on the message field."""

from __future__ import annotations

import json

import pytest

from tests.rules.helpers import row_lcr


def post(client, rule_set, message, negative=None):  # type: ignore[no-untyped-def]
    data = {"message": message if isinstance(message, str) else json.dumps(message)}
    if negative is not None:
        data["negative_rule_set"] = negative.pk
    return client.post(f"/rules/sets/{rule_set.pk}/test/", data, headers={"HX-Request": "true"})


def test_a_matching_row_change_performs_with_the_rule_true(
    monitor_client, seed_sets, rules_snapshot
):
    before = rules_snapshot()

    response = post(monitor_client, seed_sets["P"], row_lcr("INSERT", "HR", "DEPARTMENTS"))

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="test-panel"')  # the panel only, for the swap
    assert '<span class="badge text-bg-success" id="test-decision">PERFORM</span>' in html
    assert "<td>HR_SCHEMA_POS</td>" in html
    assert 'data-result="TRUE"' in html
    before.assert_unchanged()


def test_a_negative_set_hit_discards(monitor_client, seed_sets):
    html = post(
        monitor_client, seed_sets["P"], row_lcr("INSERT", "HR", "JOB_HISTORY"), seed_sets["N"]
    ).content.decode()

    assert 'id="test-decision">DISCARD<' in html
    assert "Negative rule set" in html
    assert "JOB_HISTORY_NEG" in html


def test_another_schema_is_discarded_with_the_rule_false(monitor_client, seed_sets):
    html = post(monitor_client, seed_sets["P"], row_lcr("INSERT", "OE", "ORDERS")).content.decode()

    assert 'id="test-decision">DISCARD<' in html
    assert 'data-result="FALSE"' in html


def test_a_ddl_change_makes_a_dml_rule_null(monitor_client, seed_sets):
    message = {
        "kind": "ddl_lcr",
        "command_type": "CREATE TABLE",
        "object_type": "TABLE",
        "object_owner": "HR",
        "object_name": "T",
        "source_database_name": "DBS1.EXAMPLE.COM",
    }

    html = post(monitor_client, seed_sets["P"], message).content.decode()

    assert 'data-result="NULL"' in html
    assert 'id="test-decision">DISCARD<' in html


def test_an_empty_rule_set_says_it_discards_everything(monitor_client, seed_sets):
    html = post(monitor_client, seed_sets["EMPTY"], row_lcr()).content.decode()

    assert 'id="test-decision">DISCARD<' in html
    assert "empty: every message is discarded" in html


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ("{", ""),
        ("", ""),
        ('{"kind": "row_lcr", "object_owner": "HR", "object_name": "X"}', "command_type"),
        (
            '{"kind": "row_lcr", "command_type": "INSERT", "object_owner": "HR", '
            '"object_name": "X", "tag": "zz"}',
            "tag",
        ),
        ('{"kind": "fax"}', "kind"),
        ("[1]", ""),
    ],
)
def test_a_bad_message_comes_back_on_the_message_field(monitor_client, seed_sets, message, text):
    response = post(monitor_client, seed_sets["P"], message)

    html = response.content.decode()
    assert response.status_code == 400, html[:2000]
    assert 'data-field="message"' in html
    assert text in html.split('data-field="message"', 1)[1]
    assert 'id="test-decision"' not in html


def test_the_test_form_needs_only_a_view_role(operator_client, seed_sets):
    assert post(operator_client, seed_sets["P"], row_lcr()).status_code == 200
