from rest_framework import serializers

from core.validators import name_validator
from rules.choices import VariableType
from rules.models import EvaluationContext, EvaluationContextVariable, Rule, RuleSet, RuleSetRule


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


class RuleSerializer(serializers.ModelSerializer):
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
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


class RuleUpdateSerializer(serializers.ModelSerializer):
    evaluation_context = serializers.SlugRelatedField(
        slug_field="name",
        queryset=EvaluationContext.objects.all(),
        required=False,
        allow_null=True,
    )

    class Meta:
        model = Rule
        fields = ["condition", "evaluation_context", "action_context", "comment"]


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
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
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
