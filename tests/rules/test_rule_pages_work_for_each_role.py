"""The rules pages for each role: everyone reads them; only an administrator sees the change
forms and buttons, and an operator's or monitor's change is a 403 that changes nothing."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from rules import services
from rules.models import EvaluationContext, Rule, RuleSet
from tests.rules.lang_seed import G7


@pytest.fixture
def pks(seed_sets, admin_user) -> dict[str, int]:
    ctx = services.evaluation_context_create(
        user=admin_user,
        name="SPARE_CTX",
        variables=[{"name": "M", "variable_type": "USER", "user_type": "APP.T"}],
    )
    loose = services.rule_create(user=admin_user, name="LOOSE", condition=G7)
    return {
        "rule": Rule.objects.get(name="HR_SCHEMA_POS").pk,
        "loose": loose.pk,
        "p": seed_sets["P"].pk,
        "empty": seed_sets["EMPTY"].pk,
        "ctx": ctx.pk,
        "streams": EvaluationContext.objects.get(name="STREAMS$_EVALUATION_CONTEXT").pk,
    }


READ_PAGES = [
    "/rules/",
    "/rules/?q=HR",
    "/rules/{rule}/",
    "/rules/sets/",
    "/rules/sets/{p}/",
    "/rules/sets/{empty}/",
    "/rules/contexts/",
    "/rules/contexts/{streams}/",
    "/rules/contexts/{ctx}/",
    "/status/?view=dba_rules",
    "/status/?view=dba_streams_rules",
]

FORM_PAGES = [
    "/rules/add/",
    "/rules/{rule}/edit/",
    "/rules/{rule}/delete/",
    "/rules/sets/add/",
    "/rules/sets/{p}/edit/",
    "/rules/sets/{p}/delete/",
    "/rules/sets/{p}/rules/add/",
    "/rules/contexts/add/",
    "/rules/contexts/{ctx}/delete/",
]

POSTS = [
    ("/rules/add/", {"name": "NEW_RULE", "condition": G7}),
    ("/rules/{loose}/edit/", {"condition": G7, "comment": "changed"}),
    ("/rules/{loose}/delete/", {}),
    ("/rules/sets/add/", {"name": "NEW_RS"}),
    ("/rules/sets/{p}/edit/", {"comment": "changed"}),
    ("/rules/sets/{empty}/delete/", {}),
    ("/rules/sets/{empty}/rules/add/", {"rule": "{loose}", "enabled": "on"}),
    ("/rules/sets/{p}/rules/{rule}/remove/", {}),
    ("/rules/contexts/add/", {"name": "NEW_CTX", "variables": "D SYS.LCR$_ROW_RECORD"}),
    ("/rules/contexts/{ctx}/delete/", {}),
]


def fill(path: str, pks: dict[str, int]) -> str:
    return path.format(**pks)


@pytest.mark.parametrize("role", ["admin", "operator", "monitor"])
@pytest.mark.parametrize("path", READ_PAGES)
def test_every_role_reads_the_rules_pages(request, pks, role, path):
    client = request.getfixturevalue(f"{role}_client")

    response = client.get(fill(path, pks))

    assert response.status_code == 200


@pytest.mark.parametrize("path", FORM_PAGES)
def test_an_administrator_gets_the_forms(admin_client, pks, path):
    assert admin_client.get(fill(path, pks)).status_code == 200


@pytest.mark.parametrize("role", ["operator", "monitor"])
@pytest.mark.parametrize("path", FORM_PAGES)
def test_others_are_not_shown_the_forms(request, pks, role, path):
    client = request.getfixturevalue(f"{role}_client")

    assert client.get(fill(path, pks)).status_code == 403


@pytest.mark.parametrize("role", ["operator", "monitor"])
@pytest.mark.parametrize(("path", "data"), POSTS, ids=[p for p, _ in POSTS])
def test_others_changes_are_refused_and_nothing_changes(
    request, pks, rules_snapshot, role, path, data
):
    client = request.getfixturevalue(f"{role}_client")
    before = rules_snapshot()

    response = client.post(fill(path, pks), {k: fill(v, pks) for k, v in data.items()})

    assert response.status_code == 403
    before.assert_unchanged()


@pytest.mark.parametrize(("path", "data"), POSTS, ids=[p for p, _ in POSTS])
def test_an_administrators_change_goes_through_and_is_logged(admin_client, pks, path, data):
    entries = ChangeLogEntry.objects.count()

    response = admin_client.post(fill(path, pks), {k: fill(v, pks) for k, v in data.items()})

    assert response.status_code == 302, response.content.decode()[:3000]
    assert ChangeLogEntry.objects.count() == entries + 1


def test_a_monitor_sees_no_change_buttons(monitor_client, admin_client, pks):
    for path in ("/rules/{rule}/", "/rules/sets/{p}/", "/rules/contexts/{ctx}/"):
        mine = monitor_client.get(fill(path, pks)).content.decode()
        admins = admin_client.get(fill(path, pks)).content.decode()
        assert "/delete/" not in mine, path
        assert "/delete/" in admins, path
    assert (
        "Remove</button>" not in monitor_client.get(fill("/rules/sets/{p}/", pks)).content.decode()
    )


def test_the_rule_set_page_lists_its_rules_and_the_test_form(monitor_client, pks):
    html = monitor_client.get(fill("/rules/sets/{p}/", pks)).content.decode()

    assert 'id="ruleset-members"' in html
    assert "HR_SCHEMA_POS" in html
    assert 'id="test-panel"' in html
    assert 'name="message"' in html and 'name="negative_rule_set"' in html  # the form's fields
    # The page's <title> is text only (no markup leaking from a template block).
    title = html.split("<title>", 1)[1].split("</title>", 1)[0]
    assert "<" not in title and title.startswith("P_SET")


def test_a_rule_in_a_set_is_not_dropped_from_its_page(admin_client, pks):
    response = admin_client.post(fill("/rules/{rule}/delete/", pks), follow=True)

    assert Rule.objects.filter(pk=pks["rule"]).exists()
    assert "P_SET" in response.content.decode()
    assert response.redirect_chain[-1][0] == fill("/rules/{rule}/", pks)


def test_dropping_a_rule_set_from_its_page_keeps_its_rules(admin_client, pks):
    admin_client.post(fill("/rules/sets/{p}/delete/", pks))

    assert not RuleSet.objects.filter(pk=pks["p"]).exists()
    assert Rule.objects.filter(pk=pks["rule"]).exists()
