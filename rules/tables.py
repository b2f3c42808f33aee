import django_tables2 as tables

from rules.models import EvaluationContext, Rule, RuleSet

ATTRS = {"class": "table table-sm table-hover align-middle"}


class RuleTable(tables.Table):
    name = tables.Column(linkify=True)
    condition = tables.TemplateColumn(
        '<code class="aq-condition">{{ record.condition|truncatechars:140 }}</code>',
        orderable=False,
    )
    streams_rule_type = tables.Column(verbose_name="Generated as")
    rule_set_count = tables.Column(verbose_name="Rule sets")

    class Meta:
        model = Rule
        fields = (
            "name",
            "condition",
            "classification",
            "streams_rule_type",
            "rule_type",
            "evaluation_context",
            "rule_set_count",
        )
        attrs = ATTRS


class RuleSetTable(tables.Table):
    name = tables.Column(linkify=True)
    rule_count = tables.Column(verbose_name="Rules")

    class Meta:
        model = RuleSet
        fields = ("name", "evaluation_context", "rule_count", "owner", "comment")
        attrs = ATTRS


class EvaluationContextTable(tables.Table):
    name = tables.Column(linkify=True)
    variables = tables.ManyToManyColumn(
        transform=lambda v: f"{v.name} {v.user_type or v.variable_type}", verbose_name="Variables"
    )
    builtin = tables.BooleanColumn(verbose_name="Built in")
    rule_count = tables.Column(verbose_name="Rules")

    class Meta:
        model = EvaluationContext
        fields = ("name", "variables", "builtin", "rule_count", "comment")
        attrs = ATTRS
