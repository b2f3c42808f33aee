"""Writes of the rules app (DBMS_RULE_ADM and the DBMS_STREAMS_ADM rule generators). Each verb is
one transaction and one change-log entry; conditions are parsed and validated at save time so a bad
condition never reaches evaluation."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone

from core.choices import Capability, ChangeAction
from core.exceptions import Conflict, DomainError, Forbidden
from core.roles import user_can
from core.services import (
    change_log_deletion,
    change_log_record,
    delete_or_refuse,
    object_snapshot,
)
from rules.choices import VariableType
from rules.models import (
    AQ_MESSAGE_EVALUATION_CONTEXT,
    STREAMS_EVALUATION_CONTEXT,
    CustomTransformation,
    DeclarativeTransformation,
    EvaluationContext,
    EvaluationContextVariable,
    Rule,
    RuleSet,
    RuleSetRule,
)

User = AbstractBaseUser | AnonymousUser | None

RULE_EDITABLE = ("condition", "evaluation_context", "action_context", "comment")


def _require(user: User, capability: str) -> None:
    if user is not None and not user_can(user, capability):
        raise Forbidden("Your role does not allow this.")


def _owner(user: User) -> Any:
    return user if user is not None and user.is_authenticated else None


def streams_evaluation_context() -> EvaluationContext:
    """The built-in context with :dml and :ddl (made by a migration; remade if a test flushed it)."""
    ctx, created = EvaluationContext.objects.get_or_create(
        name=STREAMS_EVALUATION_CONTEXT,
        defaults={"builtin": True, "comment": "Oracle-supplied context: :dml and :ddl."},
    )
    if created:
        EvaluationContextVariable.objects.bulk_create(
            [
                EvaluationContextVariable(
                    context=ctx, name="DML", variable_type=VariableType.ROW_LCR
                ),
                EvaluationContextVariable(
                    context=ctx, name="DDL", variable_type=VariableType.DDL_LCR
                ),
            ]
        )
    return ctx


def aq_message_evaluation_context() -> EvaluationContext:
    """The built-in context of rules on queued messages: MSG, a user message of any type (made on
    first use, as a flushed test database may lack it). New rules default to it."""
    ctx, created = EvaluationContext.objects.get_or_create(
        name=AQ_MESSAGE_EVALUATION_CONTEXT,
        defaults={"builtin": True, "comment": "Built in: :msg, a queued message's payload."},
    )
    if created:
        EvaluationContextVariable.objects.create(
            context=ctx, name="MSG", variable_type=VariableType.USER
        )
    return ctx


def condition_check(
    condition: str, *, evaluation_context: EvaluationContext | None
) -> tuple[Any, str]:
    """Parse and validate ``condition``; returns (tree, classification) or raises a DomainError on
    the ``condition`` field naming the line and column."""
    from rules.lang import ConditionError, classify, parse, validate

    if not condition or not condition.strip():
        raise DomainError(
            "A rule needs a condition (NULL conditions are not supported).", field="condition"
        )
    variables = evaluation_context.variable_kinds() if evaluation_context is not None else None
    try:
        tree = parse(condition)
        validate(tree, variables=variables)
    except ConditionError as exc:
        raise DomainError(
            str(exc), field="condition", line=exc.line, column=exc.column, expected=exc.expected
        ) from exc
    return tree, classify(tree)


# --- evaluation contexts -------------------------------------------------------------------------


@transaction.atomic
def evaluation_context_create(
    *, user: User, name: str, variables: Iterable[Mapping[str, str]], comment: str = ""
) -> EvaluationContext:
    """DBMS_RULE_ADM.CREATE_EVALUATION_CONTEXT with its variable types."""
    from rules.lang import is_variable_name

    _require(user, Capability.CONFIGURE)
    if EvaluationContext.objects.filter(name__iexact=name).exists():
        raise Conflict(f"An evaluation context named {name} already exists.", field="name")
    ctx = EvaluationContext.objects.create(name=name, comment=comment)
    seen: set[str] = set()
    for i, var in enumerate(variables):
        vname = (var.get("name") or "").strip()
        vtype = var.get("variable_type") or ""
        if not vname:
            raise DomainError("A variable needs a name.", field=f"variables[{i}].name")
        if not is_variable_name(vname):
            raise DomainError(
                f"{vname!r} is not a variable name: use a letter followed by letters, digits, "
                '_, $ or #, or a name in double quotes ("VAR$_1").',
                field=f"variables[{i}].name",
            )
        if vname.upper() in seen:
            raise DomainError(f"Variable {vname} is declared twice.", field=f"variables[{i}].name")
        if vtype not in VariableType.values:
            raise DomainError(
                f"Unknown variable type {vtype!r}.", field=f"variables[{i}].variable_type"
            )
        if vtype == VariableType.USER and not var.get("user_type"):
            raise DomainError(
                "A USER variable names its message type.", field=f"variables[{i}].user_type"
            )
        seen.add(vname.upper())
        EvaluationContextVariable.objects.create(
            context=ctx, name=vname, variable_type=vtype, user_type=var.get("user_type", "")
        )
    change_log_record(
        user=user,
        action=ChangeAction.CREATE,
        verb="evaluation_context_create",
        obj=ctx,
        after={**object_snapshot(ctx), "variables": sorted(seen)},
    )
    return ctx


@transaction.atomic
def evaluation_context_delete(*, user: User, context: EvaluationContext) -> None:
    _require(user, Capability.CONFIGURE)
    if context.builtin:
        raise Conflict(f"{context.name} is built in.")
    if context.rules.exists() or context.rule_sets.exists():
        raise Conflict(f"Rules or rule sets still use {context.name}.")
    before = object_snapshot(context)
    context.delete()
    change_log_deletion(
        user=user,
        verb="evaluation_context_delete",
        object_type="rules.evaluationcontext",
        before=before,
    )


# --- rules ---------------------------------------------------------------------------------------


def _action_context(value: Any) -> dict[str, Any]:
    """An action context is name/value pairs (SYS.RE$NV_LIST): a JSON object, or nothing."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DomainError(
            "Give a JSON object of name/value pairs (or null for none).", field="action_context"
        )
    return dict(value)


@transaction.atomic
def rule_create(
    *,
    user: User,
    name: str,
    condition: str,
    evaluation_context: EvaluationContext | None = None,
    action_context: Mapping[str, Any] | None = None,
    comment: str = "",
    **streams_metadata: Any,
) -> Rule:
    """DBMS_RULE_ADM.CREATE_RULE. ``streams_metadata`` carries the fields of system-created rules
    (streams_rule_type, rule_type, schema_name, …) when a generator makes the rule."""
    _require(user, Capability.CONFIGURE)
    if Rule.objects.filter(name__iexact=name).exists():
        raise Conflict(f"A rule named {name} already exists.", field="name")
    _, classification = condition_check(condition, evaluation_context=evaluation_context)
    rule = Rule(
        name=name,
        condition=condition,
        evaluation_context=evaluation_context,
        action_context=_action_context(action_context),
        comment=comment,
        classification=classification,
        owner=_owner(user),
        **streams_metadata,
    )
    rule.full_clean()
    rule.save()
    change_log_record(
        user=user,
        action=ChangeAction.CREATE,
        verb="rule_create",
        obj=rule,
        after=object_snapshot(rule),
    )
    return rule


@transaction.atomic
def rule_update(*, user: User, rule: Rule, **changes: Any) -> Rule:
    """DBMS_RULE_ADM.ALTER_RULE: condition, evaluation context, action context, comment."""
    _require(user, Capability.CONFIGURE)
    r = Rule.objects.select_for_update().get(pk=rule.pk)
    for key in sorted(set(changes) - set(RULE_EDITABLE)):
        raise DomainError(f"{key} cannot be changed.", field=key)
    before = object_snapshot(r)
    if "action_context" in changes:
        changes["action_context"] = _action_context(changes["action_context"])
    for key, value in changes.items():
        setattr(r, key, value)
    _, r.classification = condition_check(r.condition, evaluation_context=r.evaluation_context)
    if r.evaluation_context_id is None:
        # Without its own context the rule is evaluated in each of its sets' contexts.
        for set_ctx in EvaluationContext.objects.filter(rule_sets__rules=r).distinct():
            condition_check(r.condition, evaluation_context=set_ctx)
    else:
        clash = (
            RuleSet.objects.filter(rules=r, evaluation_context__isnull=False)
            .exclude(evaluation_context=r.evaluation_context_id)
            .first()
        )
        if clash is not None:
            raise DomainError(
                f"{r.name} is in rule set {clash.name}, which uses evaluation context "
                f"{clash.evaluation_context}.",
                field="evaluation_context",
            )
    r.full_clean()
    r.save()
    RuleSet.objects.filter(rules=r).update(updated=timezone.now())
    change_log_record(
        user=user,
        action=ChangeAction.UPDATE,
        verb="rule_update",
        obj=r,
        before=before,
        after=object_snapshot(r),
    )
    return r


@transaction.atomic
def rule_delete(*, user: User, rule: Rule) -> None:
    """DBMS_RULE_ADM.DROP_RULE without force: refused while a rule set holds the rule."""
    _require(user, Capability.CONFIGURE)
    sets = list(rule.rule_sets.values_list("name", flat=True))
    if sets:
        raise Conflict(
            f"Rule {rule.name} is in rule set(s) {', '.join(sorted(sets))}; "
            "remove it from them first."
        )
    before = object_snapshot(rule)
    rule.delete()
    change_log_deletion(user=user, verb="rule_delete", object_type="rules.rule", before=before)


# --- rule sets -----------------------------------------------------------------------------------


def _touch(rule_set: RuleSet) -> None:
    """Bump ``updated``: compiled rule sets are cached by (id, updated)."""
    RuleSet.objects.filter(pk=rule_set.pk).update(updated=timezone.now())


@transaction.atomic
def rule_set_create(
    *,
    user: User,
    name: str,
    evaluation_context: EvaluationContext | None = None,
    comment: str = "",
) -> RuleSet:
    """DBMS_RULE_ADM.CREATE_RULE_SET."""
    _require(user, Capability.CONFIGURE)
    if RuleSet.objects.filter(name__iexact=name).exists():
        raise Conflict(f"A rule set named {name} already exists.", field="name")
    rs = RuleSet(
        name=name, evaluation_context=evaluation_context, comment=comment, owner=_owner(user)
    )
    rs.full_clean()
    rs.save()
    change_log_record(
        user=user,
        action=ChangeAction.CREATE,
        verb="rule_set_create",
        obj=rs,
        after=object_snapshot(rs),
    )
    return rs


RULE_SET_EDITABLE = ("evaluation_context", "comment")


@transaction.atomic
def rule_set_update(*, user: User, rule_set: RuleSet, **changes: Any) -> RuleSet:
    """A rule set's evaluation context and comment (DBMS_RULE_ADM has no ALTER_RULE_SET: Oracle
    drops and recreates the set; here its rules and clients stay). Every member must still fit:
    a rule with its own context must use the new one, a rule without one must be valid in it."""
    _require(user, Capability.CONFIGURE)
    rs = RuleSet.objects.select_for_update().get(pk=rule_set.pk)
    for key in sorted(set(changes) - set(RULE_SET_EDITABLE)):
        raise DomainError(f"{key} cannot be changed.", field=key)
    before = object_snapshot(rs)
    for key, value in changes.items():
        setattr(rs, key, value)
    ctx = rs.evaluation_context
    if ctx is not None:
        for rule in rs.rules.select_related("evaluation_context").order_by("name"):
            if rule.evaluation_context_id not in (None, ctx.pk):
                raise DomainError(
                    f"Rule {rule.name} of this set uses evaluation context "
                    f"{rule.evaluation_context}; the set's must be the same.",
                    field="evaluation_context",
                )
            if rule.evaluation_context_id is None:
                try:
                    condition_check(rule.condition, evaluation_context=ctx)
                except DomainError as exc:
                    raise DomainError(
                        f"Rule {rule.name} of this set is not valid in {ctx}: {exc.message}",
                        field="evaluation_context",
                    ) from exc
    rs.full_clean()
    rs.save()
    _touch(rs)
    change_log_record(
        user=user,
        action=ChangeAction.UPDATE,
        verb="rule_set_update",
        obj=rs,
        before=before,
        after=object_snapshot(rs),
    )
    return rs


@transaction.atomic
def rule_set_delete(*, user: User, rule_set: RuleSet) -> None:
    """DBMS_RULE_ADM.DROP_RULE_SET (its rules stay)."""
    _require(user, Capability.CONFIGURE)
    before = {
        **object_snapshot(rule_set),
        "rules": sorted(rule_set.rules.values_list("name", flat=True)),
    }
    rule_set.members.all().delete()
    delete_or_refuse(rule_set, what=f"Rule set {rule_set.name}")
    change_log_deletion(
        user=user, verb="rule_set_delete", object_type="rules.ruleset", before=before
    )


@transaction.atomic
def rule_set_add_rule(
    *, user: User, rule_set: RuleSet, rule: Rule, enabled: bool = True
) -> RuleSetRule:
    """DBMS_RULE_ADM.ADD_RULE. A rule with its own evaluation context must match the set's."""
    _require(user, Capability.CONFIGURE)
    if RuleSetRule.objects.filter(rule_set=rule_set, rule=rule).exists():
        raise Conflict(f"{rule.name} is already in {rule_set.name}.", field="rule")
    ctx = rule_set.evaluation_context_id
    if ctx is not None and rule.evaluation_context_id not in (None, ctx):
        raise DomainError(
            f"{rule.name} uses evaluation context {rule.evaluation_context}, "
            f"rule set {rule_set.name} uses {rule_set.evaluation_context}.",
            field="rule",
        )
    if ctx is not None and rule.evaluation_context_id is None:
        # A rule without a context is evaluated in the set's: a variable that context lacks is
        # refused now, not left to evaluate to NULL for every message.
        try:
            condition_check(rule.condition, evaluation_context=rule_set.evaluation_context)
        except DomainError as exc:
            raise DomainError(
                f"{rule.name} is not valid in evaluation context "
                f"{rule_set.evaluation_context}: {exc.message}",
                field="rule",
            ) from exc
    _check_clients_using(rule_set, adding=rule)
    member = RuleSetRule.objects.create(rule_set=rule_set, rule=rule, enabled=enabled)
    _touch(rule_set)
    change_log_record(
        user=user,
        action=ChangeAction.UPDATE,
        verb="rule_set_add_rule",
        obj=rule_set,
        after={"rule": rule.name, "enabled": enabled},
    )
    return member


def _metas(rules: Iterable[Rule]) -> list[Any]:
    from rules.lang.clients import RuleMeta

    return [RuleMeta(r.name, r.streams_rule_type or "", r.rule_type or "") for r in rules]


def _set_metas(rule_set: RuleSet | None) -> list[Any] | None:
    return None if rule_set is None else _metas(rule_set.rules.all())


def client_rule_sets_check(
    client_type: str, *, positive: RuleSet | None, negative: RuleSet | None
) -> None:
    """Refuse rule sets a Streams client of this type cannot have (spec rules §3.5.1, §7.4 D17
    and D18; the checks are :func:`rules.lang.clients.check_client`): a subset rule belongs only
    in a positive rule set. The error names the client's field (``negative_rule_set``, …)."""
    from rules.lang import clients

    try:
        clients.check_client(
            client_type, positive=_set_metas(positive), negative=_set_metas(negative)
        )
    except clients.ClientConfigError as exc:
        raise DomainError(str(exc), field=exc.field) from exc


def _check_clients_using(rule_set: RuleSet, *, adding: Rule) -> None:
    """A rule joining a set that a client already uses must pass that client's checks too: a
    subset rule cannot slip into a propagation's negative rule set after it was attached."""
    from jobs.selectors import propagations_using_rule_set  # the console's Streams clients
    from rules.lang import clients

    grown = [*_metas(rule_set.rules.all()), *_metas([adding])]
    for prop, side in propagations_using_rule_set(rule_set.pk):
        positive = grown if side == "positive" else _set_metas(prop.positive_rule_set)
        negative = grown if side == "negative" else _set_metas(prop.negative_rule_set)
        try:
            clients.check_client(clients.PROPAGATION, positive=positive, negative=negative)
        except clients.ClientConfigError as exc:
            raise Conflict(
                f"Rule set {rule_set.name} is the {side} rule set of propagation {prop.name}: "
                f"{exc}",
                field="rule",
            ) from exc


@transaction.atomic
def rule_set_remove_rule(*, user: User, rule_set: RuleSet, rule: Rule) -> None:
    """DBMS_RULE_ADM.REMOVE_RULE."""
    _require(user, Capability.CONFIGURE)
    deleted, _ = RuleSetRule.objects.filter(rule_set=rule_set, rule=rule).delete()
    if not deleted:
        raise DomainError(f"{rule.name} is not in {rule_set.name}.", field="rule")
    _touch(rule_set)
    change_log_record(
        user=user,
        action=ChangeAction.UPDATE,
        verb="rule_set_remove_rule",
        obj=rule_set,
        before={"rule": rule.name},
    )


# --- system-created rules (DBMS_STREAMS_ADM.ADD_*_RULES) -----------------------------------------

GENERATOR_KINDS = ("global", "schema", "table", "subset", "message", "exclude_table")


def _generate(kind: str, params: Mapping[str, Any], variable_number: int) -> tuple[list, list]:
    """Run one generator; returns (rules for the positive set, rules for the negative set)."""
    from rules.lang import generators as g

    try:
        if kind == "exclude_table":
            excl = g.exclude_table(**params)
            return list(excl.positive), list(excl.negative)
        if kind == "message":
            rules = [g.message_rule(**params, variable_number=variable_number)]
        elif kind == "subset":
            rules = g.subset_rules(**params)
        else:
            rules = {"global": g.global_rules, "schema": g.schema_rules, "table": g.table_rules}[
                kind
            ](**params)
    except g.GeneratorError as exc:
        field = getattr(exc, "parameter", None)
        # Oracle's streams_type is include_dml/include_ddl here.
        field = "include_ddl" if field == "streams_type" else field
        raise DomainError(str(exc), field=field) from exc
    except TypeError as exc:  # a missing option, or one that kind does not take
        missing = re.search(r"required keyword-only argument: '(\w+)'", str(exc))
        if missing:
            name = missing.group(1)
            raise DomainError(f"{name} is required for {kind} rules.", field=name) from exc
        extra = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
        if extra:
            name = extra.group(1)
            raise DomainError(f"{name} does not apply to {kind} rules.", field=name) from exc
        raise DomainError(str(exc), field="kind") from exc
    positive = [r for r in rules if r.inclusion_rule]
    negative = [r for r in rules if not r.inclusion_rule]
    return positive, negative


def _next_number() -> int:
    """The next number for generated rule names and VAR$_n variables (Oracle draws both from a
    sequence); serialised by an advisory lock so concurrent generators never collide."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('aq_rule_names'))")
    return Rule.objects.count() + EvaluationContext.objects.count() + 1


def _free_name(base: str, number: int) -> tuple[str, int]:
    base = "".join(ch for ch in base.upper() if ch.isalnum() or ch in "_$#")[:110] or "RULE"
    if not base[0].isalpha():
        base = "R" + base
    while Rule.objects.filter(name__iexact=f"{base}{number}").exists():
        number += 1
    return f"{base}{number}", number + 1


def _target_set(
    name: str | None, *, user: User, context: EvaluationContext | None, default: str
) -> RuleSet:
    name = name or default
    rs = RuleSet.objects.filter(name__iexact=name).first()
    if rs is None:
        rs = rule_set_create(user=user, name=name, evaluation_context=context)
    return rs


def rules_preview(*, kind: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What :func:`rules_generate` would create, without saving anything (the dry run)."""
    if kind not in GENERATOR_KINDS:
        raise DomainError(f"Unknown generator {kind!r}.", field="kind")
    positive, negative = _generate(kind, params, 1)
    return [
        {
            "condition": r.condition,
            "streams_rule_type": str(r.streams_rule_type),
            "rule_type": str(r.rule_type or ""),
            "subsetting_operation": str(r.subsetting_operation or ""),
            "rule_set_type": set_type,
        }
        for rules, set_type in ((positive, "POSITIVE"), (negative, "NEGATIVE"))
        for r in rules
    ]


@transaction.atomic
def rules_generate(
    *,
    user: User,
    kind: str,
    params: Mapping[str, Any],
    rule_set: str | None = None,
    negative_rule_set: str | None = None,
) -> list[Rule]:
    """Generate system-created rules (ADD_GLOBAL/SCHEMA/TABLE/SUBSET/MESSAGE_RULES, or the
    exclude-a-table recipe) and put them in the positive or negative rule set, creating the set
    when absent. Rule names follow Oracle's pattern: the object's name and a number."""
    _require(user, Capability.CONFIGURE)
    if kind not in GENERATOR_KINDS:
        raise DomainError(
            f"Unknown generator {kind!r}; use one of {', '.join(GENERATOR_KINDS)}.", field="kind"
        )
    number = _next_number()
    positive, negative = _generate(kind, params, number)
    streams_ctx = streams_evaluation_context()
    created: list[Rule] = []
    for generated, set_name, default in (
        *((r, rule_set, "POSITIVE_RULES") for r in positive),
        *((r, negative_rule_set, "NEGATIVE_RULES") for r in negative),
    ):
        if generated.streams_rule_type == "MESSAGE":
            # Oracle gives each message rule its own evaluation context with one VAR$_n variable;
            # the rule set it lands in has none.
            var = generated.message_rule_variable
            ctx = evaluation_context_create(
                user=user,
                name=f"AQ$_EVAL_CTX_{var.replace('$', '').replace('VAR_', '')}",
                variables=[
                    {"name": var, "variable_type": "USER", "user_type": generated.message_type}
                ],
            )
            set_ctx = None
            base = generated.message_type.split(".")[-1]
        else:
            ctx = set_ctx = streams_ctx
            base = generated.object or generated.schema or "GLOBAL"
        name, number = _free_name(base, number)
        rule = rule_create(user=user, name=name, evaluation_context=ctx, **generated.model_fields())
        target = _target_set(set_name, user=user, context=set_ctx, default=default)
        rule_set_add_rule(user=user, rule_set=target, rule=rule)
        created.append(rule)
    return created


# --- rule-based transformations (DBMS_STREAMS_ADM.ADD_COLUMN … SET_RULE_TRANSFORM_FUNCTION) -------


def _rule_locked(rule: Rule) -> Rule:
    """The rule row, locked: transformation changes on one rule are serialised."""
    return Rule.objects.select_for_update().get(pk=rule.pk)


def _touch_sets_of(rule: Rule) -> None:
    """Bump ``updated`` of every set holding the rule, so anything cached per set is rebuilt."""
    RuleSet.objects.filter(rules=rule).update(updated=timezone.now())


def rule_is_dml(rule: Rule) -> bool:
    """Whether the rule is a DML rule: a system-created DML rule, or a rule written by hand whose
    condition applies to row LCRs only (it uses ``:dml`` and no other message variable)."""
    from rules.choices import RuleType, StreamsRuleType
    from rules.lang import ConditionError, compile_rule

    if rule.rule_type:
        return rule.rule_type == RuleType.DML and rule.streams_rule_type != StreamsRuleType.MESSAGE
    if rule.streams_rule_type == StreamsRuleType.MESSAGE:
        return False
    ctx = rule.evaluation_context
    try:
        compiled = compile_rule(
            rule.name,
            rule.condition,
            variables=ctx.variable_kinds() if ctx is not None else None,
        )
    except ConditionError:
        return False
    return compiled.applies_to == "row_lcr"


@transaction.atomic
def transformation_add_declarative(
    *, user: User, rule: Rule, declarative_type: str, step_number: int = 0, **params: Any
) -> DeclarativeTransformation:
    """DBMS_STREAMS_ADM.KEEP_COLUMNS / DELETE_COLUMN / RENAME_COLUMN / ADD_COLUMN / RENAME_TABLE /
    RENAME_SCHEMA with operation 'ADD': attach one declarative transformation to a DML rule.
    ``params`` are Oracle's parameter names (column_name, column_list, column_value,
    from_/to_column_name, from_/to_table_name, from_/to_schema_name, value_type). Names are
    stored canonical (unquoted upper-cased). Writes the row and one change-log entry."""
    from rules.lang.transform import PARAMETERS, TransformationError, declarative

    _require(user, Capability.CONFIGURE)
    r = _rule_locked(rule)
    if not rule_is_dml(r):
        if r.rule_type == "DDL":
            what = "a DDL rule"
        elif r.streams_rule_type == "MESSAGE":
            what = "a message rule"
        else:
            what = "not a DML rule (its condition is not about row LCRs only)"
        raise DomainError(
            f"{r.name} is {what}: declarative transformations change row LCRs, so they attach "
            "to DML rules only.",
            field="rule",
        )
    unknown = sorted(set(params) - set(PARAMETERS))
    if unknown:
        raise DomainError(f"{unknown[0]} is not a declarative parameter.", field=unknown[0])
    try:
        checked = declarative(declarative_type, step_number=step_number, **params)
    except TransformationError as exc:
        raise DomainError(exc.message, field=exc.field) from exc
    row = DeclarativeTransformation(rule=r, **checked.stored())
    row.full_clean()
    row.save()
    _touch_sets_of(r)
    change_log_record(
        user=user,
        action=ChangeAction.CREATE,
        verb="transformation_add_declarative",
        obj=row,
        after={**object_snapshot(row), "rule": r.name},
    )
    return row


@transaction.atomic
def transformation_remove(*, user: User, transformation: DeclarativeTransformation) -> None:
    """The same procedures with operation 'REMOVE': detach one declarative transformation."""
    _require(user, Capability.CONFIGURE)
    rule = _rule_locked(transformation.rule)
    before = {**object_snapshot(transformation), "rule": rule.name}
    transformation.delete()
    _touch_sets_of(rule)
    change_log_record(
        user=user,
        action=ChangeAction.DELETE,
        verb="transformation_remove",
        before=before,
        object_type="rules.declarativetransformation",
        object_id=before["id"],
        object_repr=f"{before['declarative_type']} on {rule.name}",
    )


def transformation_registry() -> dict[str, str]:
    """The custom transformations rules may name (settings.AQ_TRANSFORMATIONS)."""
    from django.conf import settings

    return dict(getattr(settings, "AQ_TRANSFORMATIONS", {}) or {})


@transaction.atomic
def custom_transformation_set(*, user: User, rule: Rule, function: str) -> CustomTransformation:
    """DBMS_STREAMS_ADM.SET_RULE_TRANSFORM_FUNCTION: the rule's custom transformation is the
    callable registered as ``function`` in AQ_TRANSFORMATIONS (replacing any previous one). A
    name the registry lacks is refused; nothing else is ever imported. Any rule kind may carry
    one (custom transformations can change DDL LCRs and user messages too)."""
    from rules.lang.transform import TransformationError, resolve

    _require(user, Capability.CONFIGURE)
    r = _rule_locked(rule)
    name = (function or "").strip()
    try:
        resolve(name, transformation_registry())
    except TransformationError as exc:
        raise DomainError(exc.message, field="function") from exc
    existing = CustomTransformation.objects.filter(rule=r).first()
    before = object_snapshot(existing) if existing is not None else None
    if existing is None:
        row = CustomTransformation.objects.create(rule=r, function=name)
    else:
        existing.function = name
        existing.save(update_fields=["function"])
        row = existing
    _touch_sets_of(r)
    change_log_record(
        user=user,
        action=ChangeAction.CREATE if before is None else ChangeAction.UPDATE,
        verb="custom_transformation_set",
        obj=row,
        before=before,
        after={**object_snapshot(row), "rule": r.name},
    )
    return row


@transaction.atomic
def custom_transformation_clear(*, user: User, rule: Rule) -> None:
    """SET_RULE_TRANSFORM_FUNCTION with a NULL function: the rule loses its custom
    transformation. Refused when it has none, so the change log only records real changes."""
    _require(user, Capability.CONFIGURE)
    r = _rule_locked(rule)
    existing = CustomTransformation.objects.filter(rule=r).first()
    if existing is None:
        raise DomainError(f"{r.name} has no custom transformation.", field="rule")
    before = {**object_snapshot(existing), "rule": r.name}
    existing.delete()
    _touch_sets_of(r)
    change_log_record(
        user=user,
        action=ChangeAction.DELETE,
        verb="custom_transformation_clear",
        before=before,
        object_type="rules.customtransformation",
        object_id=before["id"],
        object_repr=f"{before['function']} on {r.name}",
    )
