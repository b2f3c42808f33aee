"""Each kind of object in a definitions document: how it is read (``rows``) and how it is written
(``create``/``update``/``delete``), always through its own app's services, so every rule of
those services holds for an import and the change log records each change.

A row is the object as the document spells it: names instead of ids, secrets in plain text
(``selectors.definitions_export`` seals or drops them). Kinds are listed in dependency order:
an import creates and changes them in this order and deletes (``prune``) in the reverse one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Model, Prefetch
from django.utils.dateparse import parse_datetime

from core import crypto
from core.exceptions import DomainError
from gateway import services as gateway_services
from gateway.choices import JobStatus
from gateway.models import Agent as GatewayAgent
from gateway.models import ForeignQueue, Job, Link
from jobs import services as jobs_services
from jobs.models import Propagation
from parallel import services as parallel_services
from parallel.models import LogicalQueue, LogicalQueuePartition
from queues import services as queue_services
from queues.models import Agent as AqAgent
from queues.models import Queue, QueuePrivilege, QueueTable, Subscriber
from rules import services as rule_services
from rules.models import AQ_MESSAGE_EVALUATION_CONTEXT, EvaluationContext, Rule, RuleSet
from sites import services as site_services
from sites.models import DatabaseLink

Row = dict[str, Any]
Key = tuple[str, ...]
User = Any

# Fields holding a secret: in the document they are ``{"encrypted": token}`` or left out.
SECRET = "password"


class Unchangeable(DomainError):
    """A field the console has no service to alter (Oracle has no ALTER for it either)."""


def _refuse(field: str, what: str) -> None:
    raise Unchangeable(
        f"{field} of {what} cannot be changed by an import (no service alters it); drop the "
        "object and import it again, or leave the field as it is.",
        field=field,
    )


def _user_named(username: str | None, *, field: str) -> Any:
    if username in (None, ""):
        return None
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise DomainError(
            f"No user named {username!r}: users are not part of the definitions; create "
            "the user first.",
            field=field,
        )
    return user


def _get(model: type[Model], *, field: str, what: str, **lookup: Any) -> Any:
    obj = model.objects.filter(**lookup).first()  # type: ignore[attr-defined]
    if obj is None:
        name = " ".join(str(v) for v in lookup.values())
        raise DomainError(f"No {what} named {name}.", field=field)
    return obj


def _opt(model: type[Model], name: str | None, *, field: str, what: str) -> Any:
    return None if name in (None, "") else _get(model, field=field, what=what, name=name)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _datetime(value: Any, *, field: str) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise DomainError(f"{value!r} is not an ISO 8601 date and time.", field=field)
    return parsed


@dataclass(frozen=True)
class Kind:
    """One list of the document."""

    name: str  # the document's key
    key_fields: tuple[str, ...]
    rows: Callable[[], Iterable[tuple[Model, Row]]]
    create: Callable[[User, Row], None]
    update: Callable[[User, Model, Row, Row], None]  # (user, obj, current row, changed fields)
    delete: Callable[[User, Model], None]
    fields: tuple[str, ...]  # every field a row may have, in the document's order
    find: Callable[[Row], Model | None]
    skip_delete: Callable[[Model], bool] = lambda obj: False
    # Names the services store upper-cased (DBMS_MGWADM's): a document may write them in any case.
    upper: tuple[str, ...] = ()

    def key(self, row: Row) -> Key:
        return tuple(str(row.get(f)) for f in self.key_fields)

    def label(self, key: Key) -> str:
        return "@".join(reversed(key)) if len(key) == 2 else " ".join(key)


# --- queues app: queue tables, queues, subscribers, AQ agents, grants ----------------------------


def _queue_table_rows() -> Iterable[tuple[Model, Row]]:
    for qt in QueueTable.objects.select_related(
        "owner", "primary_instance", "secondary_instance"
    ).order_by("name"):
        yield (
            qt,
            {
                "name": qt.name,
                "sort_order": qt.sort_order,
                "multiple_consumers": qt.multiple_consumers,
                "message_grouping": qt.message_grouping,
                "secure": qt.secure,
                "payload_type": qt.payload_type,
                "payload_schema": qt.payload_schema,
                "owner": qt.owner.get_username() if qt.owner else None,
                "comment": qt.comment,
                # By name: instance numbers are given in order of first report, per database.
                "primary_instance": qt.primary_instance.name if qt.primary_instance else None,
                "secondary_instance": (
                    qt.secondary_instance.name if qt.secondary_instance else None
                ),
            },
        )


def _queue_table_create(user: User, row: Row) -> None:
    args = {k: v for k, v in row.items() if k != "owner"}
    queue_services.queue_table_create(
        user=user, owner=_user_named(row.get("owner"), field="owner"), **args
    )


def _queue_table_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    if "owner" in changes:
        changes = {**changes, "owner": _user_named(changes["owner"], field="owner")}
    queue_services.queue_table_update(user=user, queue_table=obj, **changes)


def _queue_table_delete(user: User, obj: Model) -> None:
    queue_services.queue_table_delete(user=user, queue_table=obj)


def _queue_table_find(row: Row) -> Model | None:
    return QueueTable.objects.filter(name=row.get("name")).first()


def _queue_rows() -> Iterable[tuple[Model, Row]]:
    for q in Queue.objects.select_related("queue_table", "exception_queue").order_by("name"):
        yield (
            q,
            {
                "name": q.name,
                "queue_table": q.queue_table.name,
                "kind": q.kind,
                "exception_queue": q.exception_queue.name if q.exception_queue else None,
                "max_retries": q.max_retries,
                "retry_delay": q.retry_delay,
                "retention_time": q.retention_time,
                "enqueue_enabled": q.enqueue_enabled,
                "dequeue_enabled": q.dequeue_enabled,
                "comment": q.comment,
            },
        )


def _queue_refs(row: Row) -> Row:
    out = dict(row)
    if "queue_table" in row:
        out["queue_table"] = _get(
            QueueTable, field="queue_table", what="queue table", name=row["queue_table"]
        )
    if "exception_queue" in row:
        out["exception_queue"] = _opt(
            Queue, row["exception_queue"], field="exception_queue", what="queue"
        )
    return out


def _queue_create(user: User, row: Row) -> None:
    queue_services.queue_create(user=user, **_queue_refs(row))


def _queue_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    queue_services.queue_update(user=user, queue=obj, **_queue_refs(changes))


def _queue_delete(user: User, obj: Model) -> None:
    queue_services.queue_delete(user=user, queue=obj)


def _queue_find(row: Row) -> Model | None:
    return Queue.objects.filter(name=row.get("name")).first()


def _queue_is_default_exception(obj: Model) -> bool:
    """A queue table's AQ$_<name>_E comes and goes with its table."""
    table = obj.queue_table.name  # type: ignore[attr-defined]
    return obj.name == queue_services.exception_queue_name(table)


def _internal_subscriber_ids() -> set[int]:
    """Subscribers the propagations and gateway jobs make for themselves: they come and go with
    their owner, so they are not in the document."""
    ids = set(Propagation.objects.values_list("subscriber_id", flat=True))
    ids |= set(Job.objects.exclude(subscriber=None).values_list("subscriber_id", flat=True))
    return ids


def _subscriber_rows() -> Iterable[tuple[Model, Row]]:
    internal = _internal_subscriber_ids()
    subs = Subscriber.objects.select_related("queue").order_by("queue__name", "name")
    for s in subs:
        if s.pk in internal:
            continue
        yield s, {"queue": s.queue.name, "name": s.name, "address": s.address, "rule": s.rule}


def _subscriber_create(user: User, row: Row) -> None:
    queue = _get(Queue, field="queue", what="queue", name=row["queue"])
    args = {k: row[k] for k in ("address", "rule") if k in row}
    queue_services.subscriber_add(user=user, queue=queue, name=row["name"], **args)


def _subscriber_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    _refuse(sorted(changes)[0], f"subscriber {obj}")


def _subscriber_delete(user: User, obj: Model) -> None:
    queue_services.subscriber_remove(user=user, subscriber=obj)


def _subscriber_find(row: Row) -> Model | None:
    return Subscriber.objects.filter(queue__name=row.get("queue"), name=row.get("name")).first()


def _aq_agent_rows() -> Iterable[tuple[Model, Row]]:
    for a in AqAgent.objects.prefetch_related("users").order_by("name"):
        users = sorted(u.get_username() for u in a.users.all())
        yield a, {"name": a.name, "address": a.address, "comment": a.comment, "users": users}


def _users_list(value: Any, *, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DomainError("A list of user names is expected.", field=field)
    return value


def _aq_agent_set_users(user: User, agent: Model, have: list[str], want: list[str]) -> None:
    for i, name in enumerate(want):
        if name not in have:
            db_user = _user_named(name, field=f"users[{i}]")
            queue_services.agent_enable_db_access(user=user, agent=agent, db_user=db_user)
    for name in have:
        if name not in want:
            db_user = _user_named(name, field="users")
            queue_services.agent_disable_db_access(user=user, agent=agent, db_user=db_user)


def _aq_agent_create(user: User, row: Row) -> None:
    args = {k: row[k] for k in ("address", "comment") if k in row}
    agent = queue_services.agent_create(user=user, name=row["name"], **args)
    _aq_agent_set_users(user, agent, [], _users_list(row.get("users", []), field="users"))


def _aq_agent_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    for key in sorted(set(changes) - {"users"}):
        _refuse(key, f"AQ agent {obj}")
    if "users" in changes:
        want = _users_list(changes["users"], field="users")
        _aq_agent_set_users(user, obj, current["users"], want)


def _aq_agent_delete(user: User, obj: Model) -> None:
    queue_services.agent_delete(user=user, agent=obj)


def _aq_agent_find(row: Row) -> Model | None:
    return AqAgent.objects.filter(name=row.get("name")).first()


def _grant_rows() -> Iterable[tuple[Model, Row]]:
    for g in QueuePrivilege.objects.select_related("queue", "user"):
        yield g, {"queue": g.queue.name, "user": g.user.get_username(), "privilege": g.privilege}


def _grant_create(user: User, row: Row) -> None:
    queue = _get(Queue, field="queue", what="queue", name=row["queue"])
    grantee = _user_named(row["user"], field="user")
    queue_services.queue_privilege_grant(
        user=user, queue=queue, grantee=grantee, privilege=row["privilege"]
    )


def _grant_delete(user: User, obj: Model) -> None:
    queue_services.queue_privilege_revoke(user=user, grant=obj)


def _grant_find(row: Row) -> Model | None:
    return QueuePrivilege.objects.filter(
        queue__name=row.get("queue"), user__username=row.get("user"), privilege=row.get("privilege")
    ).first()


# --- rules app: evaluation contexts, rules (with their transformations), rule sets ---------------


def _context_rows() -> Iterable[tuple[Model, Row]]:
    for c in EvaluationContext.objects.filter(builtin=False).prefetch_related("variables"):
        variables = [
            {"name": v.name, "variable_type": v.variable_type, "user_type": v.user_type}
            for v in sorted(c.variables.all(), key=lambda v: v.name)
        ]
        yield c, {"name": c.name, "comment": c.comment, "variables": variables}


def _context_create(user: User, row: Row) -> None:
    variables = row.get("variables", [])
    if not isinstance(variables, list) or not all(isinstance(v, dict) for v in variables):
        raise DomainError("A list of variables is expected.", field="variables")
    rule_services.evaluation_context_create(
        user=user, name=row["name"], variables=variables, comment=row.get("comment", "")
    )


def _context_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    _refuse(sorted(changes)[0], f"evaluation context {obj}")


def _context_delete(user: User, obj: Model) -> None:
    rule_services.evaluation_context_delete(user=user, context=obj)


def _context_find(row: Row) -> Model | None:
    return EvaluationContext.objects.filter(name=row.get("name"), builtin=False).first()


# System-created rules' metadata, fixed once the rule exists (rules.services.rule_create).
STREAMS_FIELDS = (
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
)
DECLARATIVE_FIELDS = (
    "declarative_type",
    "step_number",
    "from_schema_name",
    "to_schema_name",
    "from_table_name",
    "to_table_name",
    "from_column_name",
    "to_column_name",
    "column_name",
    "column_list",
    "column_value",
    "value_type",
)


def _declarative_params(t: Any) -> Row:
    return {f: getattr(t, f) for f in DECLARATIVE_FIELDS}


def _rule_rows() -> Iterable[tuple[Model, Row]]:
    rules = Rule.objects.select_related("evaluation_context", "custom_transform")
    for r in rules.prefetch_related("transformations").order_by("name"):
        custom = getattr(r, "custom_transform", None)
        yield (
            r,
            {
                "name": r.name,
                "condition": r.condition,
                "evaluation_context": r.evaluation_context.name if r.evaluation_context else None,
                "action_context": r.action_context,
                "comment": r.comment,
                **{f: getattr(r, f) for f in STREAMS_FIELDS},
                "transformations": [_declarative_params(t) for t in r.transformations.all()],
                "custom_transformation": custom.function if custom else None,
            },
        )


def _context_ref(name: str | None) -> Any:
    if name == AQ_MESSAGE_EVALUATION_CONTEXT:
        # Built in, but made on first use: a site that never opened a rule form lacks it.
        return rule_services.aq_message_evaluation_context()
    return _opt(EvaluationContext, name, field="evaluation_context", what="evaluation context")


def _rule_transformations(user: User, rule: Any, rows: Any) -> None:
    if not isinstance(rows, list) or not all(isinstance(t, dict) for t in rows):
        raise DomainError("A list of transformations is expected.", field="transformations")
    for t in list(rule.transformations.all()):
        rule_services.transformation_remove(user=user, transformation=t)
    for i, params in enumerate(rows):
        params = {k: v for k, v in params.items() if v not in ("", None)}
        try:
            rule_services.transformation_add_declarative(
                user=user,
                rule=rule,
                declarative_type=params.pop("declarative_type", ""),
                step_number=params.pop("step_number", 0),
                **params,
            )
        except DomainError as exc:
            raise DomainError(exc.message, field=f"transformations[{i}].{exc.field}") from exc


def _rule_custom(user: User, rule: Any, function: str | None, had: bool) -> None:
    if function:
        rule_services.custom_transformation_set(user=user, rule=rule, function=function)
    elif had:
        rule_services.custom_transformation_clear(user=user, rule=rule)


def _rule_create(user: User, row: Row) -> None:
    args = {k: v for k, v in row.items() if k in ("action_context", "comment", *STREAMS_FIELDS)}
    rule = rule_services.rule_create(
        user=user,
        name=row["name"],
        condition=row.get("condition", ""),
        evaluation_context=_context_ref(row.get("evaluation_context")),
        **args,
    )
    if row.get("transformations"):
        _rule_transformations(user, rule, row["transformations"])
    _rule_custom(user, rule, row.get("custom_transformation"), had=False)


def _rule_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    for key in STREAMS_FIELDS:
        if key in changes:
            _refuse(key, f"rule {obj}")
    editable = {k: changes[k] for k in rule_services.RULE_EDITABLE if k in changes}
    if "evaluation_context" in editable:
        editable["evaluation_context"] = _context_ref(editable["evaluation_context"])
    if editable:
        rule_services.rule_update(user=user, rule=obj, **editable)
    if "transformations" in changes:
        _rule_transformations(user, obj, changes["transformations"])
    if "custom_transformation" in changes:
        had = current["custom_transformation"] is not None
        _rule_custom(user, obj, changes["custom_transformation"], had=had)


def _rule_delete(user: User, obj: Model) -> None:
    rule_services.rule_delete(user=user, rule=obj)


def _rule_find(row: Row) -> Model | None:
    return Rule.objects.filter(name=row.get("name")).first()


def _rule_set_rows() -> Iterable[tuple[Model, Row]]:
    sets = RuleSet.objects.select_related("evaluation_context").prefetch_related("members__rule")
    for rs in sets.order_by("name"):
        members = sorted(
            ({"rule": m.rule.name, "enabled": m.enabled} for m in rs.members.all()),
            key=lambda m: m["rule"],
        )
        ctx = rs.evaluation_context.name if rs.evaluation_context else None
        yield (
            rs,
            {"name": rs.name, "evaluation_context": ctx, "comment": rs.comment, "rules": members},
        )


def _members(value: Any) -> dict[str, bool]:
    if not isinstance(value, list):
        raise DomainError("A list of {rule, enabled} members is expected.", field="rules")
    out = {}
    for i, m in enumerate(value):
        if not isinstance(m, dict) or not isinstance(m.get("rule"), str):
            raise DomainError("A member names its rule.", field=f"rules[{i}].rule")
        out[m["rule"]] = bool(m.get("enabled", True))
    return out


def _rule_set_members(user: User, rs: Any, have: dict[str, bool], want: dict[str, bool]) -> None:
    names = list(want)
    for name, enabled in have.items():
        if want.get(name) != enabled:  # gone, or its enabled flag changed (remove, then add)
            rule = Rule.objects.get(name=name)
            rule_services.rule_set_remove_rule(user=user, rule_set=rs, rule=rule)
    for name, enabled in want.items():
        if have.get(name) != enabled:
            field = f"rules[{names.index(name)}].rule"
            rule = _get(Rule, field=field, what="rule", name=name)
            try:
                rule_services.rule_set_add_rule(user=user, rule_set=rs, rule=rule, enabled=enabled)
            except DomainError as exc:
                raise type(exc)(exc.message, field=field) from exc


def _rule_set_create(user: User, row: Row) -> None:
    rs = rule_services.rule_set_create(
        user=user,
        name=row["name"],
        evaluation_context=_context_ref(row.get("evaluation_context")),
        comment=row.get("comment", ""),
    )
    _rule_set_members(user, rs, {}, _members(row.get("rules", [])))


def _rule_set_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    for key in sorted(set(changes) - {"rules"}):
        _refuse(key, f"rule set {obj}")
    if "rules" in changes:
        have = {m["rule"]: m["enabled"] for m in current["rules"]}
        _rule_set_members(user, obj, have, _members(changes["rules"]))


def _rule_set_delete(user: User, obj: Model) -> None:
    rule_services.rule_set_delete(user=user, rule_set=obj)


def _rule_set_find(row: Row) -> Model | None:
    return RuleSet.objects.filter(name=row.get("name")).first()


# --- sites app: database links ---------------------------------------------------------------------

DBLINK_CONNECTION = ("host", "port", "database", "username", "sslmode", "sslrootcert")


def _dblink_rows() -> Iterable[tuple[Model, Row]]:
    for ln in DatabaseLink.objects.order_by("name"):
        yield (
            ln,
            {
                "name": ln.name,
                **{f: getattr(ln, f) for f in DBLINK_CONNECTION},
                SECRET: crypto.decrypt(ln.password_encrypted),
                "comment": ln.comment,
            },
        )


def _dblink_create(user: User, row: Row) -> None:
    site_services.database_link_create(user=user, **row)


def _dblink_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    site_services.database_link_alter(user=user, link=obj, **changes)


def _dblink_delete(user: User, obj: Model) -> None:
    site_services.database_link_drop(user=user, link=obj)


def _dblink_find(row: Row) -> Model | None:
    return DatabaseLink.objects.filter(name=row.get("name")).first()


# --- gateway app: agents, links, foreign queues, jobs ----------------------------------------------


def _gateway_agent_rows() -> Iterable[tuple[Model, Row]]:
    for a in GatewayAgent.objects.prefetch_related("options").order_by("name"):
        options = [
            {
                "name": o.name,
                "value": crypto.decrypt(o.value) if o.encrypted else o.value,
                "encrypted": o.encrypted,
            }
            for o in sorted(a.options.all(), key=lambda o: o.name)
        ]
        yield (
            a,
            {
                "name": a.name,
                "username": a.username,
                SECRET: crypto.decrypt(a.password_encrypted),
                "max_memory": a.max_memory,
                "max_threads": a.max_threads,
                "comment": a.comment,
                "options": options,
            },
        )


def _agent_options(user: User, agent: Any, have: list[Row], want: Any) -> None:
    if not isinstance(want, list) or not all(isinstance(o, dict) for o in want):
        raise DomainError(
            "A list of {name, value, encrypted} options is expected.", field="options"
        )
    wanted = {o.get("name"): o for o in want}
    for old in have:
        if old["name"] not in wanted:
            gateway_services.agent_option_remove(user=user, agent=agent, name=old["name"])
    current = {o["name"]: o for o in have}
    for i, opt in enumerate(want):
        if current.get(opt.get("name")) == opt:
            continue
        if "value" not in opt:  # an encrypted value left out of the document: keep it
            if opt.get("name") in current:
                continue
            raise DomainError("The option's value is missing.", field=f"options[{i}].value")
        try:
            gateway_services.agent_option_set(
                user=user,
                agent=agent,
                name=opt.get("name") or "",
                value=opt["value"],
                encrypted=bool(opt.get("encrypted", False)),
            )
        except DomainError as exc:
            raise DomainError(exc.message, field=f"options[{i}].{exc.field}") from exc


def _gateway_agent_create(user: User, row: Row) -> None:
    args = {k: v for k, v in row.items() if k not in ("options",)}
    agent = gateway_services.agent_create(user=user, **args)
    _agent_options(user, agent, [], row.get("options", []))


def _gateway_agent_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    args = {k: v for k, v in changes.items() if k not in ("options",)}
    if "username" in args and SECRET not in args and args["username"]:
        args[SECRET] = current[SECRET]  # the service wants a new username's password again
    if args:
        gateway_services.agent_alter(user=user, agent=obj, **args)
    if "options" in changes:
        _agent_options(user, obj, current["options"], changes["options"])


def _gateway_agent_delete(user: User, obj: Model) -> None:
    gateway_services.agent_remove(user=user, agent=obj)


def _gateway_agent_find(row: Row) -> Model | None:
    return GatewayAgent.objects.filter(name=row.get("name")).first()


def _is_default_agent(obj: Model) -> bool:
    return bool(getattr(obj, "is_default", False))


def _link_rows() -> Iterable[tuple[Model, Row]]:
    for ln in Link.objects.select_related("agent").order_by("name"):
        yield (
            ln,
            {
                "name": ln.name,
                "agent": ln.agent.name,
                "link_type": ln.link_type,
                "properties": ln.properties,
                SECRET: crypto.decrypt(ln.password_encrypted),
                "options": ln.options,
                "max_connections": ln.max_connections,
                "outbound_log_queue": ln.outbound_log_queue,
                "comment": ln.comment,
            },
        )


def _link_create(user: User, row: Row) -> None:
    args = dict(row)
    if "agent" in args:
        args["agent"] = _get(GatewayAgent, field="agent", what="gateway agent", name=args["agent"])
    gateway_services.link_create(user=user, **args)


def _link_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    for key in ("agent", "link_type"):
        if key in changes:
            _refuse(key, f"link {obj}")
    gateway_services.link_alter(user=user, link=obj, **changes)


def _link_delete(user: User, obj: Model) -> None:
    gateway_services.link_remove(user=user, link=obj)


def _link_find(row: Row) -> Model | None:
    return Link.objects.filter(name=row.get("name")).first()


def _foreign_queue_rows() -> Iterable[tuple[Model, Row]]:
    for fq in ForeignQueue.objects.select_related("link").order_by("link__name", "name"):
        yield (
            fq,
            {
                "link": fq.link.name,
                "name": fq.name,
                "provider_queue": fq.provider_queue,
                "domain": fq.domain,
                "options": fq.options,
                "comment": fq.comment,
            },
        )


def _foreign_queue_create(user: User, row: Row) -> None:
    args = dict(row)
    args["link"] = _get(Link, field="link", what="link", name=row["link"])
    gateway_services.foreign_queue_register(user=user, **args)


def _foreign_queue_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    _refuse(sorted(changes)[0], f"foreign queue {obj}")


def _foreign_queue_delete(user: User, obj: Model) -> None:
    gateway_services.foreign_queue_unregister(user=user, foreign_queue=obj)


def _foreign_queue_find(row: Row) -> Model | None:
    return ForeignQueue.objects.filter(link__name=row.get("link"), name=row.get("name")).first()


def _job_rows() -> Iterable[tuple[Model, Row]]:
    jobs = Job.objects.exclude(status=JobStatus.DELETE_PENDING).select_related(
        "source_queue",
        "destination_queue",
        "exception_queue",
        "source_foreign__link",
        "destination_foreign__link",
        "exception_foreign__link",
    )
    for j in jobs.order_by("name"):
        yield (
            j,
            {
                "name": j.name,
                "direction": j.direction,
                "source": j.source_name,
                "destination": j.destination_name,
                "exception_queue": j.exception_name,
                "rule": j.rule,
                "transformation": j.transformation,
                "poll_interval": j.poll_interval,
                "options": j.options,
                "enabled": j.enabled,
                "comment": j.comment,
            },
        )


def _job_create(user: User, row: Row) -> None:
    renamed = {"name": "job_name", "direction": "propagation_type", "comment": "comments"}
    args = {renamed.get(k, k): v for k, v in row.items()}
    gateway_services.job_create(user=user, **args)


def _job_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    for key in ("direction", "source", "destination"):
        if key in changes:
            _refuse(key, f"job {obj}")
    args = {k: v for k, v in changes.items() if k not in ("enabled", "comment")}
    if "comment" in changes:
        args["comments"] = changes["comment"]
    if "options" in args:
        # ALTER_JOB merges options; a None value removes one.
        old = current["options"] or {}
        args["options"] = {**dict.fromkeys(old), **(changes["options"] or {})}
    if "poll_interval" in args and args["poll_interval"] in (0, None):
        args["poll_interval"] = None  # ALTER_JOB's None: back to the default
    if args:
        gateway_services.job_alter(user=user, job=obj, **args)
    if "enabled" in changes:
        verb = gateway_services.job_enable if changes["enabled"] else gateway_services.job_disable
        verb(user=user, job=obj)


def _job_delete(user: User, obj: Model) -> None:
    # force: at once, as the document says; what the foreign system holds stays (documented).
    gateway_services.job_remove(user=user, job=obj, force=True)


def _job_find(row: Row) -> Model | None:
    return Job.objects.filter(name=row.get("name")).first()


# --- jobs app: propagations and their schedules ----------------------------------------------------

SCHEDULE_FIELDS = ("start_time", "duration", "next_time", "latency", "max_failures", "enabled")


def _propagation_rows() -> Iterable[tuple[Model, Row]]:
    props = Propagation.objects.select_related(
        "source_queue", "destination_queue", "positive_rule_set", "negative_rule_set", "schedule"
    )
    for p in props.order_by("name"):
        s = getattr(p, "schedule", None)
        schedule = None
        if s is not None:
            schedule = {f: getattr(s, f) for f in SCHEDULE_FIELDS}
            schedule["start_time"] = _iso(s.start_time)
        yield (
            p,
            {
                "name": p.name,
                "source_queue": p.source_queue.name,
                "destination": p.destination,
                "positive_rule_set": p.positive_rule_set.name if p.positive_rule_set else None,
                "negative_rule_set": p.negative_rule_set.name if p.negative_rule_set else None,
                "queue_to_queue": p.queue_to_queue,
                "enabled": p.enabled,
                "comment": p.comment,
                "schedule": schedule,
            },
        )


def _rule_set_ref(name: str | None, field: str) -> Any:
    return _opt(RuleSet, name, field=field, what="rule set")


def _schedule_params(value: Any) -> Row:
    if not isinstance(value, dict):
        raise DomainError("A schedule is an object (or null).", field="schedule")
    unknown = sorted(set(value) - set(SCHEDULE_FIELDS))
    if unknown:
        raise DomainError(f"Unknown schedule field {unknown[0]}.", field=f"schedule.{unknown[0]}")
    params = {k: v for k, v in value.items() if k != "enabled"}
    if "start_time" in params:
        params["start_time"] = _datetime(params["start_time"], field="schedule.start_time")
    return params


def _schedule_enabled(user: User, prop: Any, enabled: bool) -> None:
    verb = jobs_services.schedule_enable if enabled else jobs_services.schedule_disable
    verb(user=user, propagation=prop)


def _propagation_create(user: User, row: Row) -> None:
    dest = row.get("destination") or ""
    destination: Any = dest
    if "@" not in dest:
        destination = _get(Queue, field="destination", what="queue", name=dest)
    schedule = row.get("schedule", {})
    params = _schedule_params(schedule) if schedule is not None else {}
    try:
        prop = jobs_services.propagation_create(
            user=user,
            name=row["name"],
            source_queue=_get(Queue, field="source_queue", what="queue", name=row["source_queue"]),
            destination_queue=destination,
            positive_rule_set=_rule_set_ref(row.get("positive_rule_set"), "positive_rule_set"),
            negative_rule_set=_rule_set_ref(row.get("negative_rule_set"), "negative_rule_set"),
            queue_to_queue=row.get("queue_to_queue", True),
            comment=row.get("comment", ""),
            schedule=schedule is not None,
            **params,
        )
    except DomainError as exc:
        if exc.field in params:
            raise type(exc)(exc.message, field=f"schedule.{exc.field}") from exc
        raise
    if schedule is not None and schedule.get("enabled") is False:
        _schedule_enabled(user, prop, False)
    if row.get("enabled") is False:
        jobs_services.propagation_stop(user=user, propagation=prop)


def _propagation_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    for key in ("source_queue", "destination", "queue_to_queue"):
        if key in changes:
            _refuse(key, f"propagation {obj}")
    editable = {k: changes[k] for k in jobs_services.PROPAGATION_EDITABLE if k in changes}
    for side in ("positive_rule_set", "negative_rule_set"):
        if side in editable:
            editable[side] = _rule_set_ref(editable[side], side)
    if editable:
        jobs_services.propagation_update(user=user, propagation=obj, **editable)
    if "schedule" in changes:
        want, have = changes["schedule"], current["schedule"]
        if want is None:
            jobs_services.schedule_delete(user=user, propagation=obj)
        else:
            params = _schedule_params(want)
            try:
                if have is None:
                    jobs_services.schedule_create(user=user, propagation=obj, **params)
                else:
                    changed = {k: v for k, v in params.items() if want[k] != have.get(k)}
                    if changed:
                        jobs_services.schedule_update(user=user, propagation=obj, **changed)
            except DomainError as exc:
                raise type(exc)(exc.message, field=f"schedule.{exc.field}") from exc
            enabled = want.get("enabled", True)
            # A new schedule starts enabled.
            if enabled != (True if have is None else have.get("enabled")):
                _schedule_enabled(user, obj, enabled)
    if "enabled" in changes:
        verb = (
            jobs_services.propagation_start
            if changes["enabled"]
            else jobs_services.propagation_stop
        )
        verb(user=user, propagation=obj)


def _propagation_delete(user: User, obj: Model) -> None:
    jobs_services.propagation_delete(user=user, propagation=obj)


def _propagation_find(row: Row) -> Model | None:
    return Propagation.objects.filter(name=row.get("name")).first()


# --- parallel app: logical queues (their queue tables and queues are in the lists above) --------

PARTITION_FIELDS = ("position", "queue", "primary_instance", "secondary_instance", "purpose")


def _logical_queue_rows() -> Iterable[tuple[Model, Row]]:
    parts = Prefetch(
        "partitions",
        queryset=LogicalQueuePartition.objects.select_related(
            "queue__queue_table__primary_instance", "queue__queue_table__secondary_instance"
        ).order_by("position"),
    )
    for lq in LogicalQueue.objects.prefetch_related(parts).order_by("name"):
        rows = []
        for p in lq.partitions.all():
            qt = p.queue.queue_table
            rows.append(
                {
                    "position": p.position,
                    "queue": p.queue.name,
                    # The queue table's, repeated here so the mapping reads whole (S003's view).
                    "primary_instance": qt.primary_instance.name if qt.primary_instance else None,
                    "secondary_instance": (
                        qt.secondary_instance.name if qt.secondary_instance else None
                    ),
                    "purpose": p.purpose,
                }
            )
        yield lq, {"name": lq.name, "comment": lq.comment, "partitions": rows}


def _partition_specs(value: Any) -> list[parallel_services.PartitionSpec]:
    if not isinstance(value, list):
        raise DomainError(
            "partitions is a list of {position, queue, primary_instance, secondary_instance, "
            "purpose}.",
            field="partitions",
        )
    specs = []
    for i, item in enumerate(value):
        at = f"partitions[{i}]"
        if not isinstance(item, dict):
            raise DomainError("Each partition is an object.", field=at)
        unknown = [k for k in item if k not in PARTITION_FIELDS]
        if unknown:
            raise DomainError(
                f"Unknown field {unknown[0]!r} (known: {', '.join(PARTITION_FIELDS)}).",
                field=f"{at}.{unknown[0]}",
            )
        if not isinstance(item.get("queue"), str):
            raise DomainError("queue is required (text).", field=f"{at}.queue")
        specs.append(
            parallel_services.PartitionSpec(
                position=item.get("position"),  # type: ignore[arg-type]
                queue=item["queue"],
                purpose=item.get("purpose", ""),
                primary_instance=item.get("primary_instance"),
                secondary_instance=item.get("secondary_instance"),
                instances_given="primary_instance" in item or "secondary_instance" in item,
            )
        )
    return specs


def _logical_queue_create(user: User, row: Row) -> None:
    parallel_services.logical_queue_assemble(
        user=user,
        name=row["name"],
        comment=row.get("comment", ""),
        partitions=_partition_specs(row.get("partitions", [])),
    )


def _logical_queue_update(user: User, obj: Model, current: Row, changes: Row) -> None:
    if "comment" in changes:
        parallel_services.logical_queue_update(
            user=user, logical_queue=obj, comment=changes["comment"]
        )
    if "partitions" not in changes:
        return
    specs = _partition_specs(changes["partitions"])
    have = {p["position"]: p for p in current["partitions"]}
    if sorted((s.position, s.queue) for s in specs) != sorted(
        (p["position"], p["queue"]) for p in have.values()
    ):
        _refuse("partitions (their positions and queues)", f"logical queue {obj}")
    parts = {p.position: p for p in obj.partitions.select_related("queue__queue_table")}  # type: ignore[attr-defined]
    for i, spec in enumerate(specs):
        was, part = have[spec.position], parts[spec.position]
        if spec.purpose != was["purpose"]:
            parallel_services.logical_partition_update(
                user=user, partition=part, purpose=spec.purpose
            )
        wanted = (spec.primary_instance, spec.secondary_instance)
        if spec.instances_given and wanted != (was["primary_instance"], was["secondary_instance"]):
            parallel_services.logical_partition_instances_set(
                user=user,
                queue_table=part.queue.queue_table,
                primary_instance=spec.primary_instance,
                secondary_instance=spec.secondary_instance,
                field=f"partitions[{i}]",
            )


def _logical_queue_delete(user: User, obj: Model) -> None:
    parallel_services.logical_queue_delete(user=user, logical_queue=obj)


def _logical_queue_find(row: Row) -> Model | None:
    return LogicalQueue.objects.filter(name=row.get("name")).first()


def _no_update(what: str) -> Callable[[User, Model, Row, Row], None]:
    def update(user: User, obj: Model, current: Row, changes: Row) -> None:
        _refuse(sorted(changes)[0], f"{what} {obj}")

    return update


KINDS: tuple[Kind, ...] = (
    Kind(
        "evaluation_contexts",
        ("name",),
        _context_rows,
        _context_create,
        _context_update,
        _context_delete,
        ("name", "comment", "variables"),
        _context_find,
    ),
    Kind(
        "rules",
        ("name",),
        _rule_rows,
        _rule_create,
        _rule_update,
        _rule_delete,
        (
            "name",
            "condition",
            "evaluation_context",
            "action_context",
            "comment",
            *STREAMS_FIELDS,
            "transformations",
            "custom_transformation",
        ),
        _rule_find,
    ),
    Kind(
        "rule_sets",
        ("name",),
        _rule_set_rows,
        _rule_set_create,
        _rule_set_update,
        _rule_set_delete,
        ("name", "evaluation_context", "comment", "rules"),
        _rule_set_find,
    ),
    Kind(
        "queue_tables",
        ("name",),
        _queue_table_rows,
        _queue_table_create,
        _queue_table_update,
        _queue_table_delete,
        (
            "name",
            "sort_order",
            "multiple_consumers",
            "message_grouping",
            "secure",
            "payload_type",
            "payload_schema",
            "owner",
            "comment",
            "primary_instance",
            "secondary_instance",
        ),
        _queue_table_find,
    ),
    Kind(
        "queues",
        ("name",),
        _queue_rows,
        _queue_create,
        _queue_update,
        _queue_delete,
        (
            "name",
            "queue_table",
            "kind",
            "exception_queue",
            "max_retries",
            "retry_delay",
            "retention_time",
            "enqueue_enabled",
            "dequeue_enabled",
            "comment",
        ),
        _queue_find,
        skip_delete=_queue_is_default_exception,
    ),
    Kind(
        "subscribers",
        ("queue", "name"),
        _subscriber_rows,
        _subscriber_create,
        _subscriber_update,
        _subscriber_delete,
        ("queue", "name", "address", "rule"),
        _subscriber_find,
    ),
    Kind(
        "aq_agents",
        ("name",),
        _aq_agent_rows,
        _aq_agent_create,
        _aq_agent_update,
        _aq_agent_delete,
        ("name", "address", "comment", "users"),
        _aq_agent_find,
    ),
    Kind(
        "grants",
        ("queue", "user", "privilege"),
        _grant_rows,
        _grant_create,
        _no_update("grant"),
        _grant_delete,
        ("queue", "user", "privilege"),
        _grant_find,
    ),
    Kind(
        "logical_queues",
        ("name",),
        _logical_queue_rows,
        _logical_queue_create,
        _logical_queue_update,
        _logical_queue_delete,
        ("name", "comment", "partitions"),
        _logical_queue_find,
    ),
    Kind(
        "database_links",
        ("name",),
        _dblink_rows,
        _dblink_create,
        _dblink_update,
        _dblink_delete,
        ("name", *DBLINK_CONNECTION, SECRET, "comment"),
        _dblink_find,
    ),
    Kind(
        "gateway_agents",
        ("name",),
        _gateway_agent_rows,
        _gateway_agent_create,
        _gateway_agent_update,
        _gateway_agent_delete,
        ("name", "username", SECRET, "max_memory", "max_threads", "comment", "options"),
        _gateway_agent_find,
        skip_delete=_is_default_agent,
        upper=("name",),
    ),
    Kind(
        "links",
        ("name",),
        _link_rows,
        _link_create,
        _link_update,
        _link_delete,
        (
            "name",
            "agent",
            "link_type",
            "properties",
            SECRET,
            "options",
            "max_connections",
            "outbound_log_queue",
            "comment",
        ),
        _link_find,
        upper=("name", "agent"),
    ),
    Kind(
        "foreign_queues",
        ("link", "name"),
        _foreign_queue_rows,
        _foreign_queue_create,
        _foreign_queue_update,
        _foreign_queue_delete,
        ("link", "name", "provider_queue", "domain", "options", "comment"),
        _foreign_queue_find,
        upper=("link", "name"),
    ),
    Kind(
        "propagations",
        ("name",),
        _propagation_rows,
        _propagation_create,
        _propagation_update,
        _propagation_delete,
        (
            "name",
            "source_queue",
            "destination",
            "positive_rule_set",
            "negative_rule_set",
            "queue_to_queue",
            "enabled",
            "comment",
            "schedule",
        ),
        _propagation_find,
    ),
    Kind(
        "jobs",
        ("name",),
        _job_rows,
        _job_create,
        _job_update,
        _job_delete,
        (
            "name",
            "direction",
            "source",
            "destination",
            "exception_queue",
            "rule",
            "transformation",
            "poll_interval",
            "options",
            "enabled",
            "comment",
        ),
        _job_find,
        upper=("name",),
    ),
)

BY_NAME = {k.name: k for k in KINDS}
