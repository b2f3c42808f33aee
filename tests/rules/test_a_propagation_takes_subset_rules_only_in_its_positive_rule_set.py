"""D17 (spec rules §3.5.1, §7.4): a subset rule belongs only in a positive rule set. A propagation
whose negative rule set holds one is refused, through the service, the API and the pages, with a
400 naming ``negative_rule_set``, and nothing is written; the same set as the positive one is
accepted."""

from __future__ import annotations

import pytest

from core.exceptions import DomainError
from core.models import ChangeLogEntry
from jobs import services as js
from jobs.models import Propagation
from queues.models import Subscriber
from rules import services as rs
from rules.models import RuleSet
from tests.rules.helpers import assert_form_error

pytestmark = pytest.mark.django_db

SUBSET = {"table_name": "hr.regions", "dml_condition": "region_id=2", "source_database": "DBS1"}


@pytest.fixture
def topo(admin_user, mc_table, sc_table, make_queue) -> dict:
    """SRC (multi-consumer), DST and DST2, SUBSET_RS (the three subset rules of hr.regions), and
    propagation P from SRC to DST without rule sets."""
    rs.rules_generate(user=admin_user, kind="subset", params=SUBSET, rule_set="SUBSET_RS")
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    dst2 = make_queue("DST2", sc_table)
    prop = js.propagation_create(user=admin_user, name="P", source_queue=src, destination_queue=dst)
    return {"src": src, "dst2": dst2, "set": RuleSet.objects.get(name="SUBSET_RS"), "p": prop}


def _rows() -> tuple:
    return (
        sorted(Propagation.objects.values_list("name", "positive_rule_set", "negative_rule_set")),
        sorted(Subscriber.objects.values_list("queue_id", "name")),
        ChangeLogEntry.objects.count(),
    )


def test_the_service_refuses_subset_rules_on_the_negative_side(admin_user, topo):
    before = _rows()
    with pytest.raises(DomainError) as create:
        js.propagation_create(
            user=admin_user,
            name="P2",
            source_queue=topo["src"],
            destination_queue=topo["dst2"],
            negative_rule_set=topo["set"],
        )
    with pytest.raises(DomainError) as update:
        js.propagation_update(user=admin_user, propagation=topo["p"], negative_rule_set=topo["set"])

    for err in (create.value, update.value):
        assert err.status_code == 400
        assert err.field == "negative_rule_set"
        assert "Subset rule REGIONS" in err.message and "negative rule set" in err.message
    assert _rows() == before


def test_the_same_set_is_accepted_as_the_positive_one(admin_user, topo):
    js.propagation_update(user=admin_user, propagation=topo["p"], positive_rule_set=topo["set"])
    assert Propagation.objects.get(name="P").positive_rule_set == topo["set"]


def test_the_api_answers_400_naming_negative_rule_set(admin_api, topo):
    before = _rows()
    create = admin_api.post(
        "/api/propagations/",
        {"name": "P2", "source_queue": "SRC", "destination_queue": "DST2", "negative_rule_set": "SUBSET_RS"},
    )  # fmt: skip
    update = admin_api.patch("/api/propagations/P/", {"negative_rule_set": "SUBSET_RS"})

    for response in (create, update):
        assert response.status_code == 400, response.content
        assert "subset rule" in str(response.json()["negative_rule_set"]).lower()
    assert _rows() == before


def test_the_pages_put_the_error_on_negative_rule_set(admin_client, topo):
    before = _rows()
    create = admin_client.post(
        "/propagations/add/",
        {
            "name": "P2",
            "source_queue": topo["src"].pk,
            "destination_queue": topo["dst2"].pk,
            "negative_rule_set": topo["set"].pk,
            "latency": "3",
        },
    )
    edit = admin_client.post(
        f"/propagations/{topo['p'].pk}/edit/", {"negative_rule_set": topo["set"].pk}
    )

    assert_form_error(create, "negative_rule_set", "Subset rule")
    assert_form_error(edit, "negative_rule_set", "Subset rule")
    assert _rows() == before
