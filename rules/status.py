from core.status import StatusView
from rules.models import (
    DbaEvaluationContextVar,
    DbaRule,
    DbaRuleSet,
    DbaRuleSetRule,
    DbaStreamsRule,
    DbaStreamsTransformation,
)

STATUS_VIEWS = (
    StatusView("dba_rules", DbaRule, hidden=("rule_id",), app="Rules"),
    StatusView("dba_rule_sets", DbaRuleSet, hidden=("rule_set_id",), app="Rules"),
    StatusView("dba_rule_set_rules", DbaRuleSetRule, hidden=("member_id",), app="Rules"),
    StatusView(
        "dba_streams_rules",
        DbaStreamsRule,
        hidden=("streams_rule_key", "rule_id"),
        app="Rules",
        description="Rules made by the system-created rule generators.",
    ),
    StatusView(
        "dba_evaluation_context_vars", DbaEvaluationContextVar, hidden=("variable_id",), app="Rules"
    ),
    StatusView(
        "dba_streams_transformations",
        DbaStreamsTransformation,
        hidden=("transformation_key",),
        app="Rules",
    ),
)
