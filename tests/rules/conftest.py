"""The rules suite. The compiler tests use the session fixtures ``rules_pg`` and ``spark`` of
tests/conftest.py; the rules app's API and page tests use the clients per role of
tests/conftest.py and the seed's rule sets below."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rules import services
from rules.models import EvaluationContext, RuleSet
from tests.rules.helpers import RulesSnapshot
from tests.rules.lang_seed import G5, G9


@pytest.fixture(autouse=True)
def _app_setup(request: pytest.FixtureRequest) -> None:
    """For the tests that use the database (the app's, not the compiler's): role groups present,
    cheap password hashing."""
    uses_db = {"db", "transactional_db"} & set(request.fixturenames)
    if uses_db or request.node.get_closest_marker("django_db"):
        request.getfixturevalue("role_groups")
        request.getfixturevalue("fast_passwords")


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
