"""Rules, rule sets and evaluation contexts (DBMS_RULE_ADM), with the metadata of system-created
rules (DBMS_STREAMS_ADM) and rule-based transformations."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from core.validators import name_validator
from rules.choices import (
    Classification,
    DeclarativeType,
    RuleType,
    StreamsRuleType,
    SubsettingOperation,
    ValueType,
    VariableType,
)

STREAMS_EVALUATION_CONTEXT = "STREAMS$_EVALUATION_CONTEXT"
# The built-in context of rules on queued (user) messages: one variable, :msg, the payload. A new
# rule defaults to it, since the console's rules route AQ messages (the queue pages suggest
# conditions such as :msg.x = 1); change-record rules pick STREAMS$_EVALUATION_CONTEXT.
AQ_MESSAGE_EVALUATION_CONTEXT = "AQ$_MESSAGE_EVALUATION_CONTEXT"


class EvaluationContext(models.Model):
    name = models.CharField(max_length=128, unique=True)
    comment = models.TextField(blank=True)
    builtin = models.BooleanField(default=False, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("rules:context_detail", args=[self.pk])

    def variable_kinds(self) -> dict[str, str]:
        """Bind variable name → kind, as the condition validator wants it. A name the rule
        language cannot spell (stored before names were checked, such as ``0``) is left out: no
        condition can refer to it, and it must not break every rule of the context."""
        from rules.lang import is_variable_name

        out = {}
        for var in self.variables.all():
            if not is_variable_name(var.name):
                continue
            if var.variable_type == VariableType.ROW_LCR:
                out[var.name] = "row_lcr"
            elif var.variable_type == VariableType.DDL_LCR:
                out[var.name] = "ddl_lcr"
            else:
                # A USER variable without a type name takes any payload (the rule language's
                # plain ``user`` kind; ``user:`` with nothing after it is no kind).
                out[var.name] = f"user:{var.user_type}" if var.user_type else "user"
        return out


class EvaluationContextVariable(models.Model):
    context = models.ForeignKey(
        EvaluationContext, on_delete=models.CASCADE, related_name="variables"
    )
    name = models.CharField(max_length=128)
    variable_type = models.CharField(max_length=32, choices=VariableType.choices)
    user_type = models.CharField(
        max_length=128, blank=True, help_text="The message type name, for USER variables."
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["context", "name"], name="context_variable_unique")
        ]

    def __str__(self) -> str:
        return f"{self.context}.{self.name}"


class Rule(models.Model):
    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    condition = models.TextField()
    evaluation_context = models.ForeignKey(
        EvaluationContext, null=True, blank=True, on_delete=models.PROTECT, related_name="rules"
    )
    action_context = models.JSONField(
        default=dict, blank=True, help_text="Name/value pairs handed back when the rule is TRUE."
    )
    classification = models.CharField(max_length=8, choices=Classification.choices, editable=False)
    comment = models.TextField(blank=True)
    # Metadata of system-created rules (DBA_STREAMS_RULES); empty for rules made by hand.
    streams_rule_type = models.CharField(max_length=8, choices=StreamsRuleType.choices, blank=True)
    rule_type = models.CharField(max_length=3, choices=RuleType.choices, blank=True)
    schema_name = models.CharField(max_length=128, blank=True)
    object_name = models.CharField(max_length=128, blank=True)
    subsetting_operation = models.CharField(
        max_length=6, choices=SubsettingOperation.choices, blank=True
    )
    dml_condition = models.TextField(blank=True)
    source_database = models.CharField(max_length=256, blank=True)
    include_tagged_lcr = models.BooleanField(null=True, blank=True)
    message_type = models.CharField(max_length=128, blank=True)
    message_rule_variable = models.CharField(max_length=128, blank=True)
    original_condition = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("rules:rule_detail", args=[self.pk])


class RuleSet(models.Model):
    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    evaluation_context = models.ForeignKey(
        EvaluationContext, null=True, blank=True, on_delete=models.PROTECT, related_name="rule_sets"
    )
    rules = models.ManyToManyField(Rule, through="RuleSetRule", related_name="rule_sets")
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("rules:ruleset_detail", args=[self.pk])


class RuleSetRule(models.Model):
    rule_set = models.ForeignKey(RuleSet, on_delete=models.CASCADE, related_name="members")
    rule = models.ForeignKey(Rule, on_delete=models.PROTECT, related_name="memberships")
    enabled = models.BooleanField(default=True)
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["rule__name"]
        constraints = [
            models.UniqueConstraint(fields=["rule_set", "rule"], name="rule_set_rule_unique")
        ]

    def __str__(self) -> str:
        return f"{self.rule} in {self.rule_set}"


class DeclarativeTransformation(models.Model):
    """DBMS_STREAMS_ADM.KEEP_COLUMNS, DELETE_COLUMN, RENAME_COLUMN, ADD_COLUMN, RENAME_TABLE,
    RENAME_SCHEMA attached to a DML rule; runs only on a positive rule's hit."""

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="transformations")
    declarative_type = models.CharField(max_length=16, choices=DeclarativeType.choices)
    step_number = models.PositiveIntegerField(
        default=0, help_text="0 keeps Oracle's default order; otherwise steps run in this order."
    )
    from_schema_name = models.CharField(max_length=128, blank=True)
    to_schema_name = models.CharField(max_length=128, blank=True)
    from_table_name = models.CharField(max_length=128, blank=True)
    to_table_name = models.CharField(max_length=128, blank=True)
    from_column_name = models.CharField(max_length=128, blank=True)
    to_column_name = models.CharField(max_length=128, blank=True)
    column_name = models.CharField(max_length=128, blank=True)
    column_list = models.JSONField(default=list, blank=True)
    column_value = models.JSONField(null=True, blank=True)
    value_type = models.CharField(max_length=3, choices=ValueType.choices, default=ValueType.BOTH)

    class Meta:
        ordering = ["rule", "step_number", "id"]

    def __str__(self) -> str:
        return f"{self.declarative_type} on {self.rule}"


class CustomTransformation(models.Model):
    """A Python callable registered in settings (AQ_TRANSFORMATIONS) by dotted path; never code
    typed into a form."""

    rule = models.OneToOneField(Rule, on_delete=models.CASCADE, related_name="custom_transform")
    function = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"{self.function} on {self.rule}"


# --- Oracle-named status views (created by migration 0002; read-only) ----------------------------


class DbaRule(models.Model):
    rule_id = models.BigIntegerField(primary_key=True)
    rule_owner = models.CharField(max_length=150)
    rule_name = models.CharField(max_length=128)
    rule_condition = models.TextField()
    rule_evaluation_context_owner = models.CharField(max_length=30, null=True)
    rule_evaluation_context_name = models.CharField(max_length=128, null=True)
    rule_action_context = models.TextField(null=True)
    rule_comment = models.TextField()

    class Meta:
        managed = False
        db_table = "dba_rules"
        ordering = ["rule_name"]

    def __str__(self) -> str:
        return self.rule_name


class DbaRuleSet(models.Model):
    rule_set_id = models.BigIntegerField(primary_key=True)
    rule_set_owner = models.CharField(max_length=150)
    rule_set_name = models.CharField(max_length=128)
    rule_set_eval_context_owner = models.CharField(max_length=30, null=True)
    rule_set_eval_context_name = models.CharField(max_length=128, null=True)
    rule_set_comment = models.TextField()

    class Meta:
        managed = False
        db_table = "dba_rule_sets"
        ordering = ["rule_set_name"]

    def __str__(self) -> str:
        return self.rule_set_name


class DbaRuleSetRule(models.Model):
    member_id = models.BigIntegerField(primary_key=True)
    rule_set_owner = models.CharField(max_length=150)
    rule_set_name = models.CharField(max_length=128)
    rule_owner = models.CharField(max_length=150)
    rule_name = models.CharField(max_length=128)
    rule_set_rule_enabled = models.CharField(max_length=8)
    rule_set_rule_eval_ctx_owner = models.CharField(max_length=30, null=True)
    rule_set_rule_eval_ctx_name = models.CharField(max_length=128, null=True)
    rule_set_rule_comment = models.TextField()

    class Meta:
        managed = False
        db_table = "dba_rule_set_rules"
        ordering = ["rule_set_name", "rule_name"]

    def __str__(self) -> str:
        return f"{self.rule_name} in {self.rule_set_name}"


class DbaEvaluationContextVar(models.Model):
    variable_id = models.BigIntegerField(primary_key=True)
    evaluation_context_owner = models.CharField(max_length=30)
    evaluation_context_name = models.CharField(max_length=128)
    variable_name = models.CharField(max_length=128)
    variable_type = models.CharField(max_length=128)
    variable_value_function = models.TextField(null=True)
    variable_method_function = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = "dba_evaluation_context_vars"
        ordering = ["evaluation_context_name", "variable_name"]

    def __str__(self) -> str:
        return f"{self.evaluation_context_name}.{self.variable_name}"


class DbaStreamsRule(models.Model):
    # A rule in two rule sets appears twice, so rule_id is not a key: "<rule id>-<membership id>"
    # (0 for a rule in no set) is, and the API's detail route answers one row by it.
    streams_rule_key = models.CharField(max_length=41, primary_key=True)
    rule_id = models.BigIntegerField()
    streams_type = models.CharField(max_length=30, null=True)
    streams_name = models.CharField(max_length=128, null=True)
    rule_set_owner = models.CharField(max_length=150)
    rule_set_name = models.CharField(max_length=128, null=True)
    rule_owner = models.CharField(max_length=150)
    rule_name = models.CharField(max_length=128)
    rule_condition = models.TextField()
    rule_set_type = models.CharField(max_length=8, null=True)
    streams_rule_type = models.CharField(max_length=8)
    schema_name = models.CharField(max_length=128, null=True)
    object_name = models.CharField(max_length=128, null=True)
    subsetting_operation = models.CharField(max_length=6, null=True)
    dml_condition = models.TextField(null=True)
    include_tagged_lcr = models.CharField(max_length=3, null=True)
    source_database = models.CharField(max_length=256, null=True)
    rule_type = models.CharField(max_length=3, null=True)
    message_type_owner = models.CharField(max_length=30, null=True)
    message_type_name = models.CharField(max_length=128, null=True)
    message_rule_variable = models.CharField(max_length=128, null=True)
    original_rule_condition = models.TextField(null=True)
    same_rule_condition = models.CharField(max_length=3)

    class Meta:
        managed = False
        db_table = "dba_streams_rules"
        ordering = ["rule_name"]

    def __str__(self) -> str:
        return self.rule_name


class DbaStreamsTransformation(models.Model):
    transformation_key = models.CharField(max_length=32, primary_key=True)
    rule_owner = models.CharField(max_length=150)
    rule_name = models.CharField(max_length=128)
    transform_type = models.CharField(max_length=32)
    from_schema_name = models.CharField(max_length=128, null=True)
    to_schema_name = models.CharField(max_length=128, null=True)
    from_table_name = models.CharField(max_length=128, null=True)
    to_table_name = models.CharField(max_length=128, null=True)
    schema_name = models.CharField(max_length=128, null=True)
    table_name = models.CharField(max_length=128, null=True)
    from_column_name = models.CharField(max_length=128, null=True)
    to_column_name = models.CharField(max_length=128, null=True)
    column_name = models.CharField(max_length=128, null=True)
    column_value = models.TextField(null=True)
    value_type = models.CharField(max_length=3, null=True)
    user_function_name = models.CharField(max_length=200, null=True)
    subsetting_operation = models.CharField(max_length=6, null=True)
    dml_condition = models.TextField(null=True)
    declarative_type = models.CharField(max_length=16, null=True)
    step_number = models.IntegerField(null=True)

    class Meta:
        managed = False
        db_table = "dba_streams_transformations"
        ordering = ["rule_name", "step_number"]

    def __str__(self) -> str:
        return f"{self.transform_type} on {self.rule_name}"
