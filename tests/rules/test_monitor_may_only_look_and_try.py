"""A monitor reads every rules endpoint and may validate, evaluate, test and decide (they write
nothing), but every rules write is a 403 that changes nothing."""

from __future__ import annotations

import pytest

from tests.rules.helpers import row_lcr
from tests.rules.lang_seed import G7

WRITES = [
    (
        "post",
        "/api/evaluation-contexts/",
        {"name": "C", "variables": [{"name": "D", "variable_type": "SYS.LCR$_ROW_RECORD"}]},
    ),
    ("delete", "/api/evaluation-contexts/STREAMS$_EVALUATION_CONTEXT/", None),
    ("post", "/api/rules/", {"name": "NEW_RULE", "condition": G7}),
    ("patch", "/api/rules/HR_SCHEMA_POS/", {"comment": "x"}),
    ("put", "/api/rules/HR_SCHEMA_POS/", {"condition": G7}),
    ("delete", "/api/rules/HR_SCHEMA_POS/", None),
    ("post", "/api/rules/generate/", {"kind": "table", "table_name": "hr.x"}),
    ("post", "/api/rule-sets/", {"name": "NEW_RS"}),
    ("delete", "/api/rule-sets/EMPTY_SET/", None),
    ("post", "/api/rule-sets/EMPTY_SET/add_rule/", {"rule": "HR_SCHEMA_POS"}),
    ("post", "/api/rule-sets/P_SET/remove_rule/", {"rule": "HR_SCHEMA_POS"}),
]

TRIES = [
    ("/api/rules/validate/", {"condition": G7}),
    ("/api/rules/HR_SCHEMA_POS/evaluate/", {"message": row_lcr()}),
    ("/api/rule-sets/P_SET/test/", {"message": row_lcr(), "negative_rule_set": "N_SET"}),
    ("/api/rule-sets/decide/", {"message": row_lcr(), "positive": "P_SET", "negative": "N_SET"}),
]

READS = [
    "/api/rules/",
    "/api/rules/HR_SCHEMA_POS/",
    "/api/rule-sets/",
    "/api/rule-sets/P_SET/",
    "/api/evaluation-contexts/",
    "/api/status/dba_rules/",
    "/api/status/dba_streams_rules/",
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_a_monitor_cannot_write(monitor_api, seed_sets, rules_snapshot, method, path, body):
    before = rules_snapshot()

    refused = getattr(monitor_api, method)(path, body)

    assert refused.status_code == 403
    before.assert_unchanged()


def test_a_monitor_cannot_even_dry_run_a_generator(monitor_api, rules_snapshot):
    """A dry run saves nothing, but it is the generator's verb: it needs the role that may run
    the generator, like the generator pages."""
    before = rules_snapshot()

    refused = monitor_api.post(
        "/api/rules/generate/", {"kind": "table", "table_name": "hr.x", "dry_run": True}
    )

    assert refused.status_code == 403
    before.assert_unchanged()


@pytest.mark.parametrize(("path", "body"), TRIES, ids=[p for p, _ in TRIES])
def test_a_monitor_may_try_conditions_and_messages(
    monitor_api, seed_sets, rules_snapshot, path, body
):
    before = rules_snapshot()

    got = monitor_api.post(path, body)

    assert got.status_code == 200, got.json()
    before.assert_unchanged()


@pytest.mark.parametrize("path", READS)
def test_a_monitor_reads_everything(monitor_api, seed_sets, path):
    assert monitor_api.get(path).status_code == 200


def test_a_user_without_a_role_or_a_login_gets_nothing(
    token_client, roleless_user, seed_sets, rules_snapshot
):
    before = rules_snapshot()

    for client, status in ((token_client(roleless_user), 403), (token_client(None), 401)):
        assert client.get("/api/rules/").status_code == status
        assert client.post("/api/rules/validate/", {"condition": G7}).status_code == status
        assert client.post("/api/rules/", {"name": "X", "condition": G7}).status_code == status
    before.assert_unchanged()
