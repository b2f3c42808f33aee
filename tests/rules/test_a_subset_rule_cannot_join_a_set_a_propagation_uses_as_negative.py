"""D17 after the fact (spec rules §3.5.1, §7.4): once a rule set is a propagation's negative rule
set, a subset rule cannot be added to it, by hand or by the subset generator, through the service,
the API (409 naming ``rule``: the set's use is the conflict) or the page; nothing is written. A set
used as a positive rule set takes it."""

from __future__ import annotations

import pytest

from core.exceptions import Conflict
from jobs import services as js
from rules import services as rs
from rules.models import Rule, RuleSet
from tests.rules.helpers import assert_form_error

pytestmark = pytest.mark.django_db

SUBSET = {"table_name": "hr.regions", "dml_condition": "region_id=2", "source_database": "DBS1"}
TABLE = {"table_name": "hr.job_history", "source_database": "DBS1"}


@pytest.fixture
def topo(admin_user, mc_table, sc_table, make_queue) -> dict:
    """NEG (a table rule) is the negative rule set of propagation P, POS (a table rule) the
    positive one of propagation Q; LOOSE (the subset rules of hr.regions) is used by neither."""
    rs.rules_generate(user=admin_user, kind="table", params=TABLE, rule_set="NEG")
    rs.rules_generate(user=admin_user, kind="table", params=TABLE, rule_set="POS")
    rs.rules_generate(user=admin_user, kind="subset", params=SUBSET, rule_set="LOOSE")
    src = make_queue("SRC", mc_table)
    sets = {name: RuleSet.objects.get(name=name) for name in ("NEG", "POS", "LOOSE")}
    for name, dst, side in (("P", "DST", "negative_rule_set"), ("Q", "DST2", "positive_rule_set")):
        js.propagation_create(
            user=admin_user,
            name=name,
            source_queue=src,
            destination_queue=make_queue(dst, sc_table),
            **{side: sets[side[:3].upper()]},
        )
    subset = Rule.objects.filter(rule_sets=sets["LOOSE"], subsetting_operation="INSERT").get()
    return {**sets, "subset": subset}


def test_the_service_refuses_with_a_conflict_naming_the_rule(admin_user, topo, rules_snapshot):
    before = rules_snapshot()
    with pytest.raises(Conflict) as err:
        rs.rule_set_add_rule(user=admin_user, rule_set=topo["NEG"], rule=topo["subset"])

    assert err.value.field == "rule"
    assert "negative rule set of propagation P" in err.value.message
    assert f"Subset rule {topo['subset'].name}" in err.value.message
    before.assert_unchanged()


def test_the_subset_generator_cannot_write_into_it_either(admin_user, topo, rules_snapshot):
    before = rules_snapshot()
    with pytest.raises(Conflict):
        rs.rules_generate(user=admin_user, kind="subset", params=SUBSET, rule_set="NEG")
    before.assert_unchanged()


def test_a_set_used_as_positive_takes_the_subset_rule(admin_user, topo):
    rs.rule_set_add_rule(user=admin_user, rule_set=topo["POS"], rule=topo["subset"])
    assert topo["POS"].rules.filter(pk=topo["subset"].pk).exists()


def test_the_api_answers_409_naming_rule(admin_api, topo, rules_snapshot):
    before = rules_snapshot()
    add = admin_api.post("/api/rule-sets/NEG/add_rule/", {"rule": topo["subset"].name})
    generate = admin_api.post(
        "/api/rules/generate/", {"kind": "subset", **SUBSET, "rule_set": "NEG"}, format="json"
    )

    for response in (add, generate):
        assert response.status_code == 409, response.content
        assert "negative rule set of propagation P" in str(response.json()["rule"])
    before.assert_unchanged()


def test_the_page_puts_the_error_on_rule(admin_client, topo, rules_snapshot):
    before = rules_snapshot()
    response = admin_client.post(
        f"/rules/sets/{topo['NEG'].pk}/rules/add/", {"rule": topo["subset"].pk}
    )
    assert_form_error(response, "rule", "negative rule set of propagation P")
    before.assert_unchanged()
