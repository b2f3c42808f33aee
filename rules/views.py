"""Pages of the rules app. Thin: validate the form, call one service, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django_tables2 import RequestConfig

from core.choices import Capability
from core.generic import (
    ObjectListView,
    confirm_page,
    form_page,
    require,
    run_action,
    run_service,
)
from core.lookups import name_or_id_q
from rules import selectors, services
from rules.filtersets import EvaluationContextFilterSet, RuleFilterSet, RuleSetFilterSet
from rules.forms import (
    GENERATOR_FIELDS,
    GENERATOR_TITLES,
    CustomTransformationForm,
    DeclarativeTransformationForm,
    EvaluationContextForm,
    GeneratorForm,
    RuleEditForm,
    RuleForm,
    RuleSetEditForm,
    RuleSetForm,
    RuleSetMemberForm,
    TestMessageForm,
)
from rules.models import EvaluationContext, Rule, RuleSet
from rules.tables import EvaluationContextTable, RuleSetTable, RuleTable


class RuleListView(ObjectListView):
    title = "Rules"
    table_class = RuleTable
    filterset_class = RuleFilterSet
    selector = staticmethod(selectors.rule_list)
    add_url_name = "rules:rule_add"
    template_name = "rules/rule_list.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "generator_kinds": GENERATOR_TITLES}


class RuleSetListView(ObjectListView):
    title = "Rule sets"
    table_class = RuleSetTable
    filterset_class = RuleSetFilterSet
    selector = staticmethod(selectors.rule_set_list)
    add_url_name = "rules:ruleset_add"


class ContextListView(ObjectListView):
    title = "Evaluation contexts"
    table_class = EvaluationContextTable
    filterset_class = EvaluationContextFilterSet
    selector = staticmethod(selectors.evaluation_context_list)
    add_url_name = "rules:context_add"


def condition_check(request: HttpRequest) -> HttpResponse:
    """The condition editor's as-you-type check (HTMX): valid and its class, or the error with
    its line and column."""
    require(request, Capability.VIEW)
    data = request.POST if request.method == "POST" else request.GET
    # The select sends ids; anything else (a name, 4,301 digits, a NUL) is looked up the same way.
    where = name_or_id_q(data.get("evaluation_context", ""))
    context = None if where is None else EvaluationContext.objects.filter(where).first()
    report = selectors.condition_report(data.get("condition", ""), context)
    return render(request, "rules/_condition_check.html", {"report": report})


def rule_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    # Only the blank form needs the default context: a refused POST writes nothing at all.
    initial = (
        {}
        if request.method == "POST"
        else {"evaluation_context": services.aq_message_evaluation_context()}
    )
    form = RuleForm(request.POST or None, initial=initial)
    return form_page(
        request,
        form,
        lambda: services.rule_create(user=request.user, **form.cleaned_data),
        title="New rule",
        template="rules/rule_form.html",
    )


def rule_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rule = get_object_or_404(Rule, pk=pk)
    form = RuleEditForm(request.POST or None, instance=rule)
    return form_page(
        request,
        form,
        lambda: services.rule_update(user=request.user, rule=rule, **form.cleaned_data),
        title=f"Edit {rule.name}",
        template="rules/rule_form.html",
    )


def rule_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    rule = get_object_or_404(selectors.rule_list(), pk=pk)
    return render(
        request,
        "rules/rule_detail.html",
        {
            "object": rule,
            "rule_sets": rule.rule_sets.all(),
            "report": selectors.condition_report(rule.condition, rule.evaluation_context),
            **_transformation_context(rule),
        },
    )


def rule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rule = get_object_or_404(Rule, pk=pk)
    return confirm_page(
        request,
        rule,
        lambda: services.rule_delete(user=request.user, rule=rule),
        kind="rule",
        done=f"Rule {rule.name} dropped.",
        gone_url="rules:rule_list",
    )


def ruleset_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = RuleSetForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.rule_set_create(user=request.user, **form.cleaned_data),
        title="New rule set",
    )


def ruleset_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rs = get_object_or_404(RuleSet, pk=pk)
    form = RuleSetEditForm(request.POST or None, instance=rs)
    return form_page(
        request,
        form,
        lambda: services.rule_set_update(user=request.user, rule_set=rs, **form.cleaned_data),
        title=f"Edit rule set {rs.name}",
    )


def ruleset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    rs = get_object_or_404(selectors.rule_set_list(), pk=pk)
    return render(
        request,
        "rules/ruleset_detail.html",
        {
            "object": rs,
            "members": selectors.rule_set_members(rs),
            "member_form": RuleSetMemberForm(),
            "test_form": TestMessageForm(),
        },
    )


def ruleset_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rs = get_object_or_404(RuleSet, pk=pk)
    return confirm_page(
        request,
        rs,
        lambda: services.rule_set_delete(user=request.user, rule_set=rs),
        kind="rule set",
        done=f"Rule set {rs.name} dropped.",
        gone_url="rules:ruleset_list",
    )


def ruleset_add_rule(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rs = get_object_or_404(RuleSet, pk=pk)
    form = RuleSetMemberForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.rule_set_add_rule(user=request.user, rule_set=rs, **form.cleaned_data),
        title=f"Add a rule to {rs.name}",
        success=lambda _member: redirect(rs),
    )


def ruleset_remove_rule(request: HttpRequest, pk: int, rule_pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rs = get_object_or_404(RuleSet, pk=pk)
    rule = get_object_or_404(Rule, pk=rule_pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.rule_set_remove_rule(user=request.user, rule_set=rs, rule=rule),
            f"Removed {rule.name} from {rs.name}.",
        )
    return redirect(rs)


def context_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = EvaluationContextForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.evaluation_context_create(user=request.user, **form.cleaned_data),
        title="New evaluation context",
    )


def context_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    ctx = get_object_or_404(selectors.evaluation_context_list(), pk=pk)
    rules = RuleTable(selectors.rule_list().filter(evaluation_context=ctx))
    RequestConfig(request, paginate={"per_page": 25}).configure(rules)
    return render(request, "rules/context_detail.html", {"object": ctx, "table": rules})


def context_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    ctx = get_object_or_404(EvaluationContext, pk=pk)
    return confirm_page(
        request,
        ctx,
        lambda: services.evaluation_context_delete(user=request.user, context=ctx),
        kind="evaluation context",
        done=f"Evaluation context {ctx.name} dropped.",
        gone_url="rules:context_list",
    )


def ruleset_test(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Test a message": each rule's TRUE / FALSE / NULL and the rule set's decision."""
    require(request, Capability.VIEW)
    rs = get_object_or_404(RuleSet, pk=pk)
    form = TestMessageForm(request.POST or None)
    result = None
    if request.method == "POST" and form.is_valid():
        result = run_service(
            request,
            form,
            lambda: selectors.rule_set_decide(
                selectors.message_for_test(form.cleaned_data["message"]),
                positive=rs,
                negative=form.cleaned_data.get("negative_rule_set"),
            ),
        )
    return render(
        request,
        "rules/_test_message.html",
        {"object": rs, "test_form": form, "result": result},
        status=400 if form.errors else 200,
    )


# --- rule-based transformations (a section of the rule page) ------------------------------------


def _transformation_context(rule: Rule) -> dict:
    return {
        "transformations": selectors.rule_transformation_summary(rule),
        "declarative_allowed": services.rule_is_dml(rule),
        "transformation_form": DeclarativeTransformationForm(),
        "custom_form": CustomTransformationForm(registry=services.transformation_registry()),
    }


def rule_transformation_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Add a declarative transformation (DBMS_STREAMS_ADM.ADD_COLUMN and friends)."""
    require(request, Capability.CONFIGURE)
    rule = get_object_or_404(Rule, pk=pk)
    form = DeclarativeTransformationForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.transformation_add_declarative(
            user=request.user, rule=rule, **form.params()
        ),
        title=f"Add a declarative transformation to {rule.name}",
        success=lambda _t: redirect(f"{rule.get_absolute_url()}#transformations"),
    )


def rule_transformation_remove(
    request: HttpRequest, pk: int, transformation_pk: int
) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rule = get_object_or_404(Rule, pk=pk)
    row = get_object_or_404(rule.transformations, pk=transformation_pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.transformation_remove(user=request.user, transformation=row),
            f"Removed {row.declarative_type} from {rule.name}.",
        )
    return redirect(f"{rule.get_absolute_url()}#transformations")


def rule_custom_transformation(request: HttpRequest, pk: int) -> HttpResponse:
    """Set the rule's custom transformation to a registered callable."""
    require(request, Capability.CONFIGURE)
    rule = get_object_or_404(Rule, pk=pk)
    form = CustomTransformationForm(
        request.POST or None, registry=services.transformation_registry()
    )
    return form_page(
        request,
        form,
        lambda: services.custom_transformation_set(
            user=request.user, rule=rule, function=form.cleaned_data["function"]
        ),
        title=f"Custom transformation of {rule.name}",
        success=lambda _t: redirect(f"{rule.get_absolute_url()}#transformations"),
    )


def rule_custom_transformation_clear(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    rule = get_object_or_404(Rule, pk=pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.custom_transformation_clear(user=request.user, rule=rule),
            f"Removed the custom transformation of {rule.name}.",
        )
    return redirect(f"{rule.get_absolute_url()}#transformations")


def generate(request: HttpRequest, kind: str = "table") -> HttpResponse:
    """The DBMS_STREAMS_ADM generators: preview (dry run) or create the rules."""
    require(request, Capability.VIEW if request.method == "GET" else Capability.CONFIGURE)
    if kind not in GENERATOR_FIELDS:
        raise Http404("No such generator.")
    form = GeneratorForm(request.POST or None, kind=kind)
    preview = None
    if request.method == "POST" and form.is_valid():
        if "preview" in request.POST:
            preview = run_service(
                request, form, lambda: services.rules_preview(kind=kind, params=form.params())
            )
        else:
            created = run_service(
                request,
                form,
                lambda: services.rules_generate(
                    user=request.user,
                    kind=kind,
                    params=form.params(),
                    rule_set=form.cleaned_data.get("rule_set") or None,
                    negative_rule_set=form.cleaned_data.get("negative_rule_set") or None,
                ),
            )
            if created == []:
                # Neither DML nor DDL asked for: Oracle creates nothing, and so do we, but say so.
                form.add_error(None, "These parameters generate no rule: include DML or DDL.")
            elif created is not None:
                messages.success(request, f"Created {', '.join(r.name for r in created)}.")
                sets = created[0].rule_sets.all()
                return redirect(sets[0] if sets else created[0])
    return render(
        request,
        "rules/generate.html",
        {
            "form": form,
            "kind": kind,
            "kinds": GENERATOR_TITLES,
            "preview": preview,
            "title": GENERATOR_TITLES[kind],
        },
        status=400 if form.errors else 200,
    )
