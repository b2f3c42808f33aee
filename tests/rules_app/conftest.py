"""Fixtures of the rules app's API and page tests: token and session clients per role (shared with
the API and page suites), the seed's rule sets, and a snapshot of everything a rules write touches.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rules import services
from rules.models import EvaluationContext, RuleSet
from tests.api.conftest import (  # noqa: F401  (fixtures shared with the API suite)
    _fast_passwords,
    _role_groups,
    admin_api,
    monitor_api,
    operator_api,
    roleless_user,
    token_client,
)
from tests.pages.conftest import (  # noqa: F401  (fixtures shared with the page suite)
    admin_client,
    monitor_client,
    operator_client,
)
from tests.rules.lang_seed import G5, G9
from tests.rules_app.helpers import RulesSnapshot


@pytest.fixture
def streams_context(db) -> EvaluationContext:
    """The built-in STREAMS$_EVALUATION_CONTEXT (remade if a transactional test flushed it)."""
    return services.streams_evaluation_context()


@pytest.fixture
def seed_sets(admin_user, streams_context) -> dict[str, RuleSet]:
    """The rule sets of the seed's Table 5-1 tests: N = {G9} (negative: hr.job_history, tagged
    or not), P = {G5} (positive: schema HR, untagged, from DBS1), and an empty set."""

    def rule_set(name: str, rule_name: str | None, condition: str | None) -> RuleSet:
        rs = services.rule_set_create(
            user=admin_user, name=name, evaluation_context=streams_context
        )
        if rule_name is not None:
            rule = services.rule_create(
                user=admin_user,
                name=rule_name,
                condition=condition,
                evaluation_context=streams_context,
            )
            services.rule_set_add_rule(user=admin_user, rule_set=rs, rule=rule)
        return rs

    return {
        "N": rule_set("N_SET", "JOB_HISTORY_NEG", G9),
        "P": rule_set("P_SET", "HR_SCHEMA_POS", G5),
        "EMPTY": rule_set("EMPTY_SET", None, None),
    }


@pytest.fixture
def rules_snapshot() -> Callable[[], RulesSnapshot]:
    return RulesSnapshot
