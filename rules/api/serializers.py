from rest_framework import serializers

from core.api.fields import JSONField
from core.api.serializers import ModelSerializer
from core.validators import name_validator
from rules.choices import DeclarativeType, ValueType, VariableType
from rules.models import (
    DeclarativeTransformation,
    EvaluationContext,
    EvaluationContextVariable,
    Rule,
    RuleSet,
    RuleSetRule,
)


class VariableSerializer(serializers.ModelSerializer):
    variable_type = serializers.ChoiceField(choices=VariableType.choices)

    class Meta:
        model = EvaluationContextVariable
        fields = ["name", "variable_type", "user_type"]


class EvaluationContextSerializer(serializers.ModelSerializer):
    variables = VariableSerializer(many=True)
    rule_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = EvaluationContext
        fields = ["id", "name", "comment", "builtin", "variables", "rule_count", "created"]
        read_only_fields = ["builtin", "created"]
        extra_kwargs = {"name": {"validators": []}}


class RuleSerializer(ModelSerializer):
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )
    owner = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="The user who created it; null once that user is removed.",
    )
    rule_sets = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = Rule
        fields = [
            "id",
            "name",
            "owner",
            "condition",
            "evaluation_context",
            "action_context",
            "classification",
            "comment",
            "rule_sets",
            "streams_rule_type",
            "rule_type",
            "schema_name",
            "object_name",
            "subsetting_operation",
            "dml_condition",
            "source_database",
            "include_tagged_lcr",
            "message_type",
            "message_rule_variable",
            "original_condition",
            "created",
            "updated",
        ]
        read_only_fields = [
            "classification",
            "streams_rule_type",
            "rule_type",
            "schema_name",
            "object_name",
            "subsetting_operation",
            "dml_condition",
            "source_database",
            "include_tagged_lcr",
            "message_type",
            "message_rule_variable",
            "original_condition",
            "created",
            "updated",
        ]
        extra_kwargs = {"name": {"validators": [name_validator]}}


class RuleUpdateSerializer(ModelSerializer):
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )

    class Meta:
        model = Rule
        fields = ["condition", "evaluation_context", "action_context", "comment"]


class RuleSetUpdateSerializer(ModelSerializer):
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )

    class Meta:
        model = RuleSet
        fields = ["evaluation_context", "comment"]


class RuleSetMemberSerializer(serializers.ModelSerializer):
    rule = serializers.SlugRelatedField(slug_field="name", read_only=True)
    condition = serializers.CharField(source="rule.condition", read_only=True)

    class Meta:
        model = RuleSetRule
        fields = ["rule", "condition", "enabled"]


class RuleSetSerializer(serializers.ModelSerializer):
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )
    owner = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="The user who created it; null once that user is removed.",
    )
    members = RuleSetMemberSerializer(many=True, read_only=True)
    rule_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = RuleSet
        fields = [
            "id",
            "name",
            "owner",
            "evaluation_context",
            "comment",
            "rule_count",
            "members",
            "created",
            "updated",
        ]
        read_only_fields = ["created", "updated"]
        extra_kwargs = {"name": {"validators": [name_validator]}}


class RuleSetMembershipSerializer(serializers.Serializer):
    rule = serializers.SlugRelatedField(slug_field="name", queryset=Rule.objects.all())
    enabled = serializers.BooleanField(default=True)


class ConditionCheckSerializer(serializers.Serializer):
    condition = serializers.CharField(allow_blank=True, trim_whitespace=False)
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )


class ConditionCheckResultSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    classification = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    line = serializers.IntegerField(allow_null=True)
    column = serializers.IntegerField(allow_null=True)
    expected = serializers.CharField(allow_null=True)


class GenerateSerializer(serializers.Serializer):
    """One DBMS_STREAMS_ADM generator call; the options are Oracle's parameter names."""

    kind = serializers.ChoiceField(
        choices=["global", "schema", "table", "subset", "message", "exclude_table"]
    )
    rule_set = serializers.CharField(required=False, allow_null=True, max_length=128)
    negative_rule_set = serializers.CharField(required=False, allow_null=True, max_length=128)
    dry_run = serializers.BooleanField(default=False)
    table_name = serializers.CharField(required=False, max_length=257)
    schema_name = serializers.CharField(required=False, max_length=128)
    include_dml = serializers.BooleanField(required=False)
    include_ddl = serializers.BooleanField(required=False)
    include_tagged_lcr = serializers.BooleanField(required=False)
    source_database = serializers.CharField(required=False, allow_null=True, max_length=256)
    inclusion_rule = serializers.BooleanField(required=False)
    and_condition = serializers.CharField(required=False, allow_null=True)
    dml_condition = serializers.CharField(required=False)
    message_type = serializers.CharField(required=False, max_length=257)
    rule_condition = serializers.CharField(required=False)
    column_types = serializers.DictField(child=serializers.CharField(), required=False)

    PARAMS = (
        "table_name",
        "schema_name",
        "include_dml",
        "include_ddl",
        "include_tagged_lcr",
        "source_database",
        "inclusion_rule",
        "and_condition",
        "dml_condition",
        "message_type",
        "rule_condition",
        "column_types",
    )

    def params(self) -> dict:
        return {k: v for k, v in self.validated_data.items() if k in self.PARAMS}


class GeneratedRuleSerializer(serializers.Serializer):
    condition = serializers.CharField()
    streams_rule_type = serializers.CharField()
    rule_type = serializers.CharField(allow_blank=True)
    subsetting_operation = serializers.CharField(allow_blank=True)
    rule_set_type = serializers.CharField()


class MessageInputSerializer(serializers.Serializer):
    message = JSONField(
        help_text='{"kind": "row_lcr" | "ddl_lcr" | "user", …} (fields of spec/rules.md §7.1).'
    )


class RuleSetTestSerializer(MessageInputSerializer):
    negative_rule_set = serializers.SlugRelatedField(
        slug_field="name", queryset=RuleSet.objects.all(), required=False, allow_null=True
    )


class DecideSerializer(MessageInputSerializer):
    positive = serializers.SlugRelatedField(
        slug_field="name",
        queryset=RuleSet.objects.all(),
        allow_null=True,
        help_text="Positive rule set name, or null for none.",
    )
    negative = serializers.SlugRelatedField(
        slug_field="name",
        queryset=RuleSet.objects.all(),
        allow_null=True,
        help_text="Negative rule set name, or null for none.",
    )


# --- rule-based transformations ------------------------------------------------------------------


class DeclarativeTransformationSerializer(serializers.ModelSerializer):
    """One declarative transformation as stored (names canonical, upper-cased unless quoted)."""

    class Meta:
        model = DeclarativeTransformation
        fields = [
            "id",
            "declarative_type",
            "step_number",
            "value_type",
            "column_name",
            "column_list",
            "column_value",
            "from_column_name",
            "to_column_name",
            "from_table_name",
            "to_table_name",
            "from_schema_name",
            "to_schema_name",
        ]
        read_only_fields = fields


class DeclarativeTransformationInputSerializer(serializers.Serializer):
    """DBMS_STREAMS_ADM.KEEP_COLUMNS … RENAME_SCHEMA: the type and Oracle's parameter names.
    Only shapes are checked here; which names each type needs is the service's check."""

    declarative_type = serializers.ChoiceField(choices=DeclarativeType.choices)
    step_number = serializers.IntegerField(min_value=0, default=0)
    value_type = serializers.ChoiceField(
        choices=ValueType.choices,
        required=False,
        allow_null=True,
        help_text="OLD, NEW or *; default NEW for ADD COLUMN, * for the other column types.",
    )
    column_name = serializers.CharField(required=False, allow_blank=True, max_length=128)
    column_list = serializers.ListField(child=serializers.CharField(max_length=128), required=False)
    column_value = JSONField(required=False, allow_null=True)
    from_column_name = serializers.CharField(required=False, allow_blank=True, max_length=128)
    to_column_name = serializers.CharField(required=False, allow_blank=True, max_length=128)
    from_table_name = serializers.CharField(
        required=False, allow_blank=True, max_length=257, help_text="schema.table"
    )
    to_table_name = serializers.CharField(
        required=False, allow_blank=True, max_length=257, help_text="schema.table"
    )
    from_schema_name = serializers.CharField(required=False, allow_blank=True, max_length=128)
    to_schema_name = serializers.CharField(required=False, allow_blank=True, max_length=128)


class CustomTransformationSerializer(serializers.Serializer):
    function = serializers.CharField(
        max_length=200, help_text="A name registered in the AQ_TRANSFORMATIONS setting."
    )


class RuleTransformationsSerializer(serializers.Serializer):
    """Everything a rule does to a message it is TRUE for, in execution order."""

    subsetting_operation = serializers.CharField(allow_null=True)
    declarative = DeclarativeTransformationSerializer(many=True)
    custom = serializers.CharField(allow_null=True)
