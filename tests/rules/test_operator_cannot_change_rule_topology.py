"""An operator runs queues but the rules are topology: every rules write is a 403 for an operator,
while reading and trying messages work."""

from __future__ import annotations

import pytest

from tests.rules.helpers import row_lcr
from tests.rules.test_monitor_may_only_look_and_try import TRIES, WRITES


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_an_operator_cannot_change_rules(
    operator_api, seed_sets, rules_snapshot, method, path, body
):
    before = rules_snapshot()

    refused = getattr(operator_api, method)(path, body)

    assert refused.status_code == 403
    before.assert_unchanged()


@pytest.mark.parametrize(("path", "body"), TRIES, ids=[p for p, _ in TRIES])
def test_an_operator_may_try_messages(operator_api, seed_sets, path, body):
    assert operator_api.post(path, body).status_code == 200


def test_an_operator_sees_the_decision(operator_api, seed_sets):
    got = operator_api.post(
        "/api/rule-sets/decide/",
        {
            "message": row_lcr("INSERT", "HR", "JOB_HISTORY"),
            "positive": "P_SET",
            "negative": "N_SET",
        },
    ).json()

    assert got["decision"] == "DISCARD"
