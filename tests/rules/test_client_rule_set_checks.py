"""Spec §7.4 D17 to D18: rule-set configurations Oracle refuses are refused before they exist."""

from __future__ import annotations

import pytest

from rules.lang.clients import ClientConfigError, RuleMeta, check_client

TABLE_DML = RuleMeta("LOCATIONS1", "TABLE", "DML")
SUBSET_DML = RuleMeta("REGIONS2", "SUBSET", "DML")
SCHEMA_DML = RuleMeta("HR3", "SCHEMA", "DML")
GLOBAL_DDL = RuleMeta("GLOBAL4", "GLOBAL", "DDL")
MESSAGE = RuleMeta("ORDER_T5", "MESSAGE", "")


def test_d17_a_subset_rule_in_a_negative_rule_set_is_refused_for_any_client():
    for client in ("CAPTURE", "PROPAGATION", "APPLY"):
        with pytest.raises(ClientConfigError) as err:
            check_client(client, positive=[TABLE_DML], negative=[SUBSET_DML])
        assert err.value.field == "negative_rule_set"


def test_d18_a_synchronous_capture_with_a_negative_rule_set_is_refused():
    with pytest.raises(ClientConfigError) as err:
        check_client("SYNC_CAPTURE", positive=[TABLE_DML], negative=[])
    assert err.value.field == "negative_rule_set"


@pytest.mark.parametrize("rule", [SCHEMA_DML, GLOBAL_DDL, RuleMeta("MINE", "", "")])
def test_d18_a_synchronous_capture_with_a_schema_global_or_hand_written_rule_is_refused(rule):
    with pytest.raises(ClientConfigError) as err:
        check_client("SYNC_CAPTURE", positive=[TABLE_DML, rule], negative=None)
    assert err.value.field == "positive_rule_set"
    assert rule.name in str(err.value)


def test_a_synchronous_capture_needs_a_positive_rule_set():
    with pytest.raises(ClientConfigError):
        check_client("SYNC_CAPTURE", positive=None, negative=None)


def test_a_synchronous_capture_with_table_and_subset_dml_rules_is_accepted():
    check_client("SYNC_CAPTURE", positive=[TABLE_DML, SUBSET_DML], negative=None)


def test_message_rules_are_refused_for_capture_but_fine_for_apply_and_propagation():
    with pytest.raises(ClientConfigError):
        check_client("CAPTURE", positive=[MESSAGE], negative=None)
    check_client("APPLY", positive=[MESSAGE], negative=None)
    check_client("PROPAGATION", positive=None, negative=[MESSAGE])


def test_an_unknown_client_type_names_client_type():
    with pytest.raises(ClientConfigError) as err:
        check_client("ROBOT", positive=None, negative=None)
    assert err.value.field == "client_type"
