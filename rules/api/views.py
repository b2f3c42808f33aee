"""API of the rules app: the same selectors, FilterSets and services as the pages."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.mixins import NameOrIdLookupMixin
from core.choices import Capability
from rules import selectors, services
from rules.api import serializers as s
from rules.filtersets import EvaluationContextFilterSet, RuleFilterSet, RuleSetFilterSet
from rules.models import EvaluationContext, Rule, RuleSet


class EvaluationContextViewSet(
    NameOrIdLookupMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Evaluation contexts and their variable types (DBMS_RULE_ADM)."""

    serializer_class = s.EvaluationContextSerializer
    filterset_class = EvaluationContextFilterSet

    def get_queryset(self) -> QuerySet[EvaluationContext]:
        return selectors.evaluation_context_list()

    def perform_create(self, serializer: s.EvaluationContextSerializer) -> None:
        d = serializer.validated_data
        ctx = services.evaluation_context_create(
            user=self.request.user,
            name=d["name"],
            comment=d.get("comment", ""),
            variables=d.get("variables", []),
        )
        serializer.instance = selectors.evaluation_context_list().get(pk=ctx.pk)

    def perform_destroy(self, instance: EvaluationContext) -> None:
        services.evaluation_context_delete(user=self.request.user, context=instance)


class RuleViewSet(NameOrIdLookupMixin, viewsets.ModelViewSet):
    """Rules. ``validate`` checks a condition without saving; ``evaluate`` tries one rule (or a
    condition) against a message and answers TRUE, FALSE or NULL."""

    serializer_class = s.RuleSerializer
    filterset_class = RuleFilterSet
    ordering_fields = ["name", "created", "classification"]
    action_capabilities = {"validate": Capability.VIEW, "evaluate": Capability.VIEW}

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        if self.action == "generate":
            return s.GenerateSerializer
        return s.RuleSerializer

    def get_queryset(self) -> QuerySet[Rule]:
        return selectors.rule_list()

    def perform_create(self, serializer: s.RuleSerializer) -> None:
        rule = services.rule_create(user=self.request.user, **serializer.validated_data)
        serializer.instance = selectors.rule_list().get(pk=rule.pk)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rule = self.get_object()
        ser = s.RuleUpdateSerializer(rule, data=request.data, partial=True)
        ser.is_valid(raise_exception=True)
        services.rule_update(user=request.user, rule=rule, **ser.validated_data)
        return Response(s.RuleSerializer(selectors.rule_list().get(pk=rule.pk)).data)

    def perform_destroy(self, instance: Rule) -> None:
        services.rule_delete(user=self.request.user, rule=instance)

    @extend_schema(request=s.ConditionCheckSerializer, responses=s.ConditionCheckResultSerializer)
    @action(detail=False, methods=["post"])
    def validate(self, request: Request) -> Response:
        """Parse and validate a condition; errors name the line, column and what was expected."""
        ser = s.ConditionCheckSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        return Response(
            selectors.condition_report(
                ser.validated_data["condition"], ser.validated_data.get("evaluation_context")
            )
        )

    @extend_schema(request=s.MessageInputSerializer, responses=dict)
    @action(detail=True, methods=["post"])
    def evaluate(self, request: Request, pk: str | None = None) -> Response:
        """TRUE, FALSE or NULL of this rule for a message (NULL too when the rule does not apply
        to that kind of message)."""
        rule = self.get_object()
        ser = s.MessageInputSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        message = selectors.message_for_test(ser.validated_data["message"])
        return Response(selectors.rule_test(rule, message))

    @extend_schema(
        request=s.GenerateSerializer,
        responses={
            200: OpenApiResponse(
                s.GeneratedRuleSerializer(many=True), description="dry_run: nothing saved."
            ),
            201: OpenApiResponse(s.RuleSerializer(many=True), description="The rules created."),
        },
    )
    # Lists, not pages: pagination_class=None keeps the schema from wrapping them in one.
    @action(detail=False, methods=["post"], pagination_class=None)
    def generate(self, request: Request) -> Response:
        """ADD_GLOBAL/SCHEMA/TABLE/SUBSET/MESSAGE_RULES or the exclude-a-table recipe. With
        ``dry_run`` the conditions are returned and nothing is saved."""
        ser = s.GenerateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        if d["dry_run"]:
            return Response(services.rules_preview(kind=d["kind"], params=ser.params()))
        rules = services.rules_generate(
            user=request.user,
            kind=d["kind"],
            params=ser.params(),
            rule_set=d.get("rule_set"),
            negative_rule_set=d.get("negative_rule_set"),
        )
        qs = selectors.rule_list().filter(pk__in=[r.pk for r in rules])
        return Response(s.RuleSerializer(qs, many=True).data, status=status.HTTP_201_CREATED)

    # --- rule-based transformations ---------------------------------------------------------

    def _transformations(self, rule: Rule) -> dict[str, Any]:
        return s.RuleTransformationsSerializer(selectors.rule_transformation_summary(rule)).data

    @extend_schema(methods=["GET"], request=None, responses=s.RuleTransformationsSerializer)
    @extend_schema(
        methods=["POST"],
        request=s.DeclarativeTransformationInputSerializer,
        responses={201: s.DeclarativeTransformationSerializer},
    )
    @action(detail=True, methods=["get", "post"])
    def transformations(self, request: Request, pk: str | None = None) -> Response:
        """GET: what the rule does to a message it is TRUE for, in execution order. POST: add a
        declarative transformation (KEEP_COLUMNS … RENAME_SCHEMA; DML rules only)."""
        rule = self.get_object()
        if request.method != "POST":
            return Response(self._transformations(rule))
        ser = s.DeclarativeTransformationInputSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        row = services.transformation_add_declarative(
            user=request.user, rule=rule, **ser.validated_data
        )
        return Response(
            s.DeclarativeTransformationSerializer(row).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=None, responses={204: None})
    @action(
        detail=True,
        methods=["delete"],
        url_path=r"transformations/(?P<transformation_id>[0-9]+)",
    )
    def remove_transformation(
        self, request: Request, pk: str | None = None, transformation_id: str | None = None
    ) -> Response:
        """Remove one declarative transformation (operation 'REMOVE')."""
        rule = self.get_object()
        row = rule.transformations.filter(pk=transformation_id).first()
        if row is None:
            raise Http404(f"Rule {rule.name} has no transformation {transformation_id}.")
        services.transformation_remove(user=request.user, transformation=row)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        methods=["PUT"],
        request=s.CustomTransformationSerializer,
        responses=s.RuleTransformationsSerializer,
    )
    @extend_schema(methods=["DELETE"], request=None, responses={204: None})
    @action(detail=True, methods=["put", "delete"], url_path="custom-transformation")
    def custom_transformation(self, request: Request, pk: str | None = None) -> Response:
        """PUT: set the rule's custom transformation to a callable registered in
        AQ_TRANSFORMATIONS (SET_RULE_TRANSFORM_FUNCTION). DELETE: remove it."""
        rule = self.get_object()
        if request.method == "DELETE":
            services.custom_transformation_clear(user=request.user, rule=rule)
            return Response(status=status.HTTP_204_NO_CONTENT)
        ser = s.CustomTransformationSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.custom_transformation_set(
            user=request.user, rule=rule, function=ser.validated_data["function"]
        )
        return Response(self._transformations(selectors.rule_list().get(pk=rule.pk)))


class RuleSetViewSet(
    NameOrIdLookupMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Rule sets; ``add_rule`` / ``remove_rule`` are DBMS_RULE_ADM.ADD_RULE / REMOVE_RULE."""

    serializer_class = s.RuleSetSerializer
    filterset_class = RuleSetFilterSet
    action_capabilities = {
        "test": Capability.VIEW,
        "decide": Capability.VIEW,
        "transform": Capability.VIEW,
    }

    def get_queryset(self) -> QuerySet[RuleSet]:
        return selectors.rule_set_list().prefetch_related("members__rule")

    def perform_create(self, serializer: s.RuleSetSerializer) -> None:
        rs = services.rule_set_create(user=self.request.user, **serializer.validated_data)
        serializer.instance = self.get_queryset().get(pk=rs.pk)

    def perform_destroy(self, instance: RuleSet) -> None:
        services.rule_set_delete(user=self.request.user, rule_set=instance)

    @extend_schema(request=s.RuleSetUpdateSerializer, responses=s.RuleSetSerializer)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A rule set's evaluation context and comment (the console's rule set edit page)."""
        rule_set = self.get_object()
        ser = s.RuleSetUpdateSerializer(rule_set, data=request.data, partial=True)
        ser.is_valid(raise_exception=True)
        services.rule_set_update(user=request.user, rule_set=rule_set, **ser.validated_data)
        return Response(s.RuleSetSerializer(self.get_queryset().get(pk=rule_set.pk)).data)

    @extend_schema(request=s.RuleSetTestSerializer, responses=dict)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Dry run: every rule's value and this set's decision (as the positive set, after an
        optional negative set) for a message. Nothing is written."""
        rs = self.get_object()
        ser = s.RuleSetTestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        message = selectors.message_for_test(ser.validated_data["message"])
        return Response(
            selectors.rule_set_decide(
                message, positive=rs, negative=ser.validated_data.get("negative_rule_set")
            )
        )

    @extend_schema(request=s.DecideSerializer, responses=dict)
    @action(detail=False, methods=["post"])
    def decide(self, request: Request) -> Response:
        """Table 5-1 for a message and a client's positive and negative rule sets (either may be
        null): PERFORM or DISCARD, with the reason and every rule's value."""
        ser = s.DecideSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        message = selectors.message_for_test(d["message"])
        return Response(
            selectors.rule_set_decide(message, positive=d["positive"], negative=d["negative"])
        )

    @extend_schema(request=s.RuleSetMembershipSerializer, responses={201: s.RuleSetSerializer})
    @action(detail=True, methods=["post"])
    def add_rule(self, request: Request, pk: str | None = None) -> Response:
        rs = self.get_object()
        ser = s.RuleSetMembershipSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.rule_set_add_rule(user=request.user, rule_set=rs, **ser.validated_data)
        return Response(
            s.RuleSetSerializer(self.get_queryset().get(pk=rs.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=s.RuleSetMembershipSerializer, responses=s.RuleSetSerializer)
    @action(detail=True, methods=["post"])
    def remove_rule(self, request: Request, pk: str | None = None) -> Response:
        rs = self.get_object()
        ser = s.RuleSetMembershipSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        services.rule_set_remove_rule(
            user=request.user, rule_set=rs, rule=ser.validated_data["rule"]
        )
        return Response(s.RuleSetSerializer(self.get_queryset().get(pk=rs.pk)).data)

    @extend_schema(request=s.RuleSetTestSerializer, responses=dict)
    @action(detail=True, methods=["post"])
    def transform(self, request: Request, pk: str | None = None) -> Response:
        """Dry run of the whole client pipeline with this set as the positive rule set (after an
        optional negative set): the decision and, on a positive hit, the message after row
        migration, declarative and custom transformations, step by step. Nothing is written."""
        rs = self.get_object()
        ser = s.RuleSetTestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        message = selectors.message_for_test(ser.validated_data["message"])
        return Response(
            selectors.rule_set_apply(
                message, positive=rs, negative=ser.validated_data.get("negative_rule_set")
            )
        )
