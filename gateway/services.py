"""Writes of the Messaging Gateway (DBMS_MGWADM): agents, options, links, foreign queues, jobs,
and the requests the agent process carries out (start, shutdown, job removal, cleanup).

Each verb is one transaction and one change-log entry; pages, API, the ``mgwadm`` facade and the
command line all call these. As in MGW (§1.2), every procedure works whether the agent runs or
not: the agent re-reads its configuration at each poll, and a change that needs a restart is
collected in ``Agent.restart_required``. A start sends the agent's Celery task after commit.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core import crypto
from core.choices import Capability, ChangeAction
from core.exceptions import Conflict, DomainError, Forbidden, NotFound
from core.roles import user_can
from core.services import change_log_deletion, change_log_record, object_snapshot
from gateway import lifecycle
from gateway.choices import (
    AGENT_LIVE_STATES,
    AgentStatus,
    CleanupAction,
    Direction,
    Domain,
    JobStatus,
    LinkType,
    LogLevel,
    Recovery,
    ShutdownMode,
)
from gateway.config import config
from gateway.drivers import driver_class, link_driver
from gateway.drivers.base import ForeignError, PropertyError
from gateway.models import (
    DEFAULT_AGENT,
    Agent,
    AgentLogLine,
    AgentOption,
    ForeignQueue,
    Job,
    Link,
    ReceiveLog,
    SendLog,
)
from gateway.options import AGENT_OPTIONS, JOB_OPTIONS, coerce
from gateway.selectors import (
    agent_ping,
    agent_place,
    agent_place_missed_beats,
    live_agent_ids,
)
from gateway.tasks import agent_run
from instances.selectors import instance_queue
from queues import engine
from queues import services as queue_services
from queues.choices import QueueKind
from queues.models import DbaService, Queue, Subscriber
from sites.models import DatabaseLink

User = AbstractBaseUser | AnonymousUser | None

# ALTER_JOB/ALTER_AGENT's "leave unchanged" (DBMS_MGWADM.NO_CHANGE).
NO_CHANGE: Any = object()


def _require(user: User, capability: str) -> None:
    if user is not None and not user_can(user, capability):
        raise Forbidden("Your role does not allow this.")


def _log(user: User, action: str, verb: str, obj: Any, before: Any = None, after: Any = None):
    change_log_record(user=user, action=action, verb=verb, obj=obj, before=before, after=after)


def _upper_name(value: str, *, field: str) -> str:
    name = (value or "").strip().upper()
    if not name:
        raise DomainError("A name is required.", field=field)
    return name


def _snapshot(obj: Any) -> dict[str, Any]:
    data = object_snapshot(obj)
    for key in ("password_encrypted",):
        if data.get(key):
            data[key] = crypto.MASK
    return data


# --- agents --------------------------------------------------------------------------------------


def _check_agent_numbers(max_threads: Any, max_memory: Any) -> None:
    if max_threads is not None and not (isinstance(max_threads, int) and 1 <= max_threads <= 128):
        raise DomainError("max_threads must be between 1 and 128.", field="max_threads")
    if max_memory is not None and not (isinstance(max_memory, int) and 16 <= max_memory <= 65536):
        raise DomainError("max_memory must be between 16 and 65536 MB.", field="max_memory")


def _check_service(value: Any) -> str:
    """CREATE_AGENT/ALTER_AGENT ``service``: a queue's service name (DBA_SERVICES.NAME, a queue's
    network name), stored as DBA_SERVICES spells it; None or "" for none."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DomainError("service must be a queue's service name (text).", field="service")
    value = value.strip()
    if not value:
        return ""
    found = DbaService.objects.filter(name__iexact=value).values_list("name", flat=True).first()
    if found is None:
        raise DomainError(
            f"Unknown service {value!r}: name a queue's service (DBA_SERVICES.NAME, the "
            "queue's network_name).",
            field="service",
        )
    return found


@transaction.atomic
def agent_create(
    *,
    user: User,
    name: str,
    username: str = "",
    password: str = "",
    max_memory: int = 64,
    max_threads: int = 1,
    service: str | None = "",
    comment: str = "",
) -> Agent:
    """CREATE_AGENT: a stopped agent with its own Celery queue ``mgw.<NAME>``; ``service`` names
    the queue service whose owner instance runs it (docs/INSTANCES.md)."""
    _require(user, Capability.CONFIGURE)
    name = _upper_name(name, field="agent_name")
    if Agent.objects.filter(name=name).exists():
        raise Conflict(f"Agent {name} already exists.", field="agent_name")
    if username and not password:
        raise DomainError("A username needs its password.", field="password")
    _check_agent_numbers(max_threads, max_memory)
    agent = Agent(
        name=name,
        username=username.strip(),
        password_encrypted=crypto.encrypt(password) if username else "",
        max_memory=max_memory,
        max_threads=max_threads,
        service=_check_service(service),
        comment=comment,
    )
    agent.full_clean()
    agent.save()
    _log(user, ChangeAction.CREATE, "agent_create", agent, after=_snapshot(agent))
    return agent


@transaction.atomic
def agent_alter(
    *,
    user: User,
    agent: Agent,
    username: Any = NO_CHANGE,
    password: Any = NO_CHANGE,
    max_memory: Any = NO_CHANGE,
    max_threads: Any = NO_CHANGE,
    service: Any = NO_CHANGE,
    comment: Any = NO_CHANGE,
) -> Agent:
    """ALTER_AGENT: what is given changes, the rest stays. A new username needs its password;
    max_memory and max_threads of a running agent apply at its next start; a new ``service``
    moves a running agent to its owner instance at its next beat."""
    _require(user, Capability.CONFIGURE)
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    before = _snapshot(a)
    if username is not NO_CHANGE and (username or "") != a.username:
        if username and password is NO_CHANGE:
            raise DomainError("A new username needs its password.", field="password")
        a.username = (username or "").strip()
        if not a.username:
            a.password_encrypted = ""
    if password is not NO_CHANGE:
        if not a.username:
            raise DomainError("Set a username before its password.", field="username")
        a.password_encrypted = crypto.encrypt(password or "")
    _check_agent_numbers(
        None if max_threads is NO_CHANGE else max_threads,
        None if max_memory is NO_CHANGE else max_memory,
    )
    pending = set(a.restart_required or [])
    for field_name, value in (("max_memory", max_memory), ("max_threads", max_threads)):
        if value is not NO_CHANGE and value != getattr(a, field_name):
            setattr(a, field_name, value)
            if a.status != AgentStatus.NOT_STARTED:
                pending.add(field_name)
    unchanged = isinstance(service, str) and service.strip().upper() == a.service.upper()
    if service is not NO_CHANGE and not unchanged:
        # The form sends the service back with every edit: one that stopped resolving (its
        # queue renamed or dropped) must not block changing something else.
        a.service = _check_service(service)
    if comment is not NO_CHANGE:
        a.comment = comment or ""
    a.restart_required = sorted(pending)
    a.full_clean()
    a.save(update_fields=_AGENT_CONFIG_FIELDS)
    _log(user, ChangeAction.UPDATE, "agent_alter", a, before=before, after=_snapshot(a))
    lifecycle.notify_agent(a.pk)
    return a


@transaction.atomic
def agent_remove(*, user: User, agent: Agent) -> None:
    """REMOVE_AGENT: not DEFAULT_AGENT, not while it has links, not unless stopped."""
    _require(user, Capability.CONFIGURE)
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    if a.is_default:
        raise Conflict("DEFAULT_AGENT always exists and cannot be removed.", field="agent_name")
    if a.links.exists():
        names = ", ".join(a.links.values_list("name", flat=True)[:5])
        raise Conflict(
            f"Agent {a.name} still has links ({names}); remove them first.", field="agent_name"
        )
    if a.status != AgentStatus.NOT_STARTED:
        raise Conflict(f"Agent {a.name} is {a.status}; shut it down first.", field="status")
    before = _snapshot(a)
    a.delete()
    change_log_deletion(user=user, verb="agent_remove", object_type="gateway.agent", before=before)


# What ALTER_AGENT writes; the run-time columns are gateway/lifecycle.py's.
_AGENT_CONFIG_FIELDS = [
    "username",
    "password_encrypted",
    "max_memory",
    "max_threads",
    "service",
    "comment",
    "restart_required",
    "updated",
]


def _send_start(agent: Agent, token: uuid.UUID) -> None:
    # To the instance that must run it (the owner of the queue table it follows), through that
    # instance's copy of the agent's queue; with none, to the queue every worker of it shares.
    place = agent_place(agent.pk)
    queue = instance_queue(place, agent.celery_queue) if place else agent.celery_queue
    # A start nobody took by then is sent again with a new token (lifecycle's re-send), which
    # makes this one stale: expiring it keeps a queue without workers from piling them up.
    expires = config()["START_RESEND_S"]
    transaction.on_commit(
        lambda: agent_run.apply_async((agent.pk, str(token)), queue=queue, expires=expires)
    )


@transaction.atomic
def agent_startup(*, user: User, agent: Agent) -> Agent:
    """STARTUP: START_SCHEDULED now; a worker serving ``mgw.<NAME>`` takes the start task and
    walks STARTING → INITIALIZING → RUNNING (gateway/agent.py)."""
    _require(user, Capability.OPERATE)
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    if a.status == AgentStatus.BROKEN:
        raise Conflict(
            f"Agent {a.name} is BROKEN: run CLEANUP_GATEWAY with CLEAN_STARTUP_STATE first.",
            field="status",
        )
    if a.status != AgentStatus.NOT_STARTED:
        raise Conflict(f"Agent {a.name} is already {a.status}.", field="status")
    if not a.username:
        # §2.3, §5.2: no start without an agent user (the PostgreSQL role the agent logs in as).
        raise Conflict(
            f"Agent {a.name} has no agent user: set its username and password (ALTER_AGENT) "
            "before STARTUP.",
            field="username",
        )
    if not a.password_encrypted:
        raise DomainError(f"Agent {a.name} has a username but no password.", field="password")
    token = lifecycle.agent_schedule_start(a.pk)
    assert token is not None  # NOT_STARTED under our row lock
    a.refresh_from_db()
    _log(user, ChangeAction.UPDATE, "agent_startup", a)
    _send_start(a, token)
    return a


@transaction.atomic
def agent_shutdown(*, user: User, agent: Agent, mode: str = ShutdownMode.NORMAL) -> Agent:
    """SHUTDOWN: a scheduled start is withdrawn at once; a live agent goes SHUTTING_DOWN and
    ends at its next poll (NORMAL lets running job cycles finish, IMMEDIATE stops them after
    the batch in hand)."""
    _require(user, Capability.OPERATE)
    if mode not in ShutdownMode.values:
        raise DomainError(f"Unknown shutdown mode {mode!r}.", field="shutdown_mode")
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    if a.status == AgentStatus.NOT_STARTED:
        raise Conflict(f"Agent {a.name} is not started.", field="status")
    if a.status == AgentStatus.BROKEN:
        raise Conflict(
            f"Agent {a.name} is BROKEN: use CLEANUP_GATEWAY with CLEAN_STARTUP_STATE.",
            field="status",
        )
    lifecycle.agent_request_shutdown(a.pk, mode)
    a.refresh_from_db()
    _log(user, ChangeAction.UPDATE, "agent_shutdown", a, after={"mode": mode})
    lifecycle.notify_agent(a.pk)
    return a


@transaction.atomic
def agent_set_log_level(*, user: User, agent: Agent, log_level: int | str) -> Agent:
    """SET_LOG_LEVEL: BASIC_LOGGING (0) to TRACE_DEBUG_HIGH_LOGGING (4), by number or name. The
    agent must be RUNNING (§2.3); it applies the level at its next beat, and keeps it for its
    next start (MGW's mgw.ora log_level)."""
    _require(user, Capability.OPERATE)
    level = LogLevel.parse(log_level)
    if level is None:
        names = ", ".join(f"{lv.name} ({lv.value})" for lv in LogLevel)
        raise DomainError(f"log_level must be one of {names}.", field="log_level")
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    if a.status != AgentStatus.RUNNING:
        raise Conflict(
            f"SET_LOG_LEVEL needs a RUNNING agent; {a.name} is {a.status}.", field="status"
        )
    before = {"log_level": LogLevel(a.log_level).name}
    a.log_level = level
    a.save(update_fields=["log_level", "updated"])
    _log(user, ChangeAction.UPDATE, "agent_set_log_level", a, before, {"log_level": level.name})
    lifecycle.notify_agent(a.pk)
    return a


def _agent_option_value(name: str, value: str, *, secret: bool) -> str:
    option = AGENT_OPTIONS.get(name)
    if option is not None:
        coerce(name, option, value, field="value", secret=secret)
    return value


@transaction.atomic
def agent_option_set(
    *, user: User, agent: Agent, name: str, value: str, encrypted: bool = False
) -> AgentOption:
    """SET_OPTION(AGENT_JAVA_PROP): add or replace one option; an encrypted one is stored as a
    Fernet token and shown as <<ENCRYPTED>>. A running agent applies it at its next start."""
    _require(user, Capability.CONFIGURE)
    name = (name or "").strip()
    if not name:
        raise DomainError("An option needs a name.", field="name")
    _agent_option_value(name, value, secret=encrypted)
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    stored = crypto.encrypt(value) if encrypted else value
    opt, _ = AgentOption.objects.update_or_create(
        agent=a, name=name, defaults={"value": stored, "encrypted": encrypted}
    )
    if a.status != AgentStatus.NOT_STARTED:
        a.restart_required = sorted(set(a.restart_required or []) | {f"option {name}"})
        a.save(update_fields=["restart_required", "updated"])
    _log(user, ChangeAction.UPDATE, "agent_option_set", a, after={"option": name})
    return opt


@transaction.atomic
def agent_option_remove(*, user: User, agent: Agent, name: str) -> None:
    _require(user, Capability.CONFIGURE)
    deleted, _ = AgentOption.objects.filter(agent=agent, name=name).delete()
    if not deleted:
        raise NotFound(f"Agent {agent.name} has no option {name}.", field="name")
    _log(user, ChangeAction.UPDATE, "agent_option_remove", agent, before={"option": name})


def agent_option_values(agent: Agent) -> dict[str, str]:
    """The agent's options decrypted, for the agent process only."""
    return {
        o.name: crypto.decrypt(o.value) if o.encrypted else o.value for o in agent.options.all()
    }


# --- cleanup (CLEANUP_GATEWAY) -------------------------------------------------------------------


@transaction.atomic
def agent_cleanup(*, user: User, agent: Agent, action: str, sarg: str = "") -> Agent:
    """CLEANUP_GATEWAY. CLEAN_STARTUP_STATE forgets a dead or BROKEN agent's run-time state (after
    the operator made sure no process is left); the other actions need a RUNNING agent, which
    carries them out at its next poll."""
    _require(user, Capability.OPERATE)
    if action not in CleanupAction.values:
        raise DomainError(f"Unknown cleanup action {action!r}.", field="action")
    a = Agent.objects.select_for_update().get(pk=agent.pk)
    if action == CleanupAction.CLEAN_STARTUP_STATE:
        if a.status in (AgentStatus.NOT_STARTED, AgentStatus.START_SCHEDULED):
            raise Conflict(
                f"Agent {a.name} is {a.status}; there is no startup state to clean.",
                field="status",
            )
        if a.status not in (AgentStatus.BROKEN, AgentStatus.STARTING) and not a.shutdown_requested:
            raise Conflict(
                f"Agent {a.name} is {a.status}: call SHUTDOWN first (CLEAN_STARTUP_STATE is for "
                "an agent that does not answer it).",
                field="status",
            )
        if agent_ping(a) == "REACHABLE":
            raise Conflict(f"Agent {a.name} answers; shut it down instead.", field="status")
        lifecycle.agent_clean_startup_state(a.pk)
        a.refresh_from_db()
        _log(user, ChangeAction.UPDATE, "cleanup_gateway", a, after={"action": action})
        return a
    if a.status != AgentStatus.RUNNING:
        raise Conflict(f"{action} needs a RUNNING agent; {a.name} is {a.status}.", field="status")
    if action == CleanupAction.CLEAN_LOG_QUEUES:
        # Log records of jobs that no longer exist, and old inbound keys (the agent also does this
        # at every start).
        SendLog.objects.filter(job__link__agent=a, job__status=JobStatus.DELETE_PENDING).delete()
        ReceiveLog.objects.filter(job__link__agent=a, job__status=JobStatus.DELETE_PENDING).delete()
        _log(user, ChangeAction.UPDATE, "cleanup_gateway", a, after={"action": action})
        return a
    want = (
        Recovery.MISSING_LOG_RECORD
        if action == CleanupAction.RESET_SUB_MISSING_LOG_REC
        else Recovery.MISSING_MESSAGE
    )
    job = Job.objects.select_for_update().filter(name=(sarg or "").strip().upper()).first()
    if job is None or job.link.agent_id != a.pk:
        raise NotFound(f"Agent {a.name} has no job {sarg!r}.", field="sarg")
    if job.recovery != want:
        raise Conflict(
            f"Job {job.name} has no {want.label} problem (recovery: {job.recovery or 'none'}).",
            field="sarg",
        )
    # The agent acts on the flag at its next poll: it writes our log record for the batch in
    # doubt (missing message) or starts the foreign log afresh (missing log record).
    lifecycle.job_recovery_reset(job.pk, want)
    _log(user, ChangeAction.UPDATE, "cleanup_gateway", job, after={"action": action})
    lifecycle.notify_agent(a.pk)
    return a


# --- links ---------------------------------------------------------------------------------------


def _password_from_properties(properties: Any, password: Any) -> tuple[Any, Any]:
    """DBMS_MGWADM passes a link's password inside its properties (SYS.MGW_MQSERIES_PROPERTIES
    has a password attribute): it is taken out and becomes the link's password, stored
    encrypted like one given apart. Two different passwords, one each way, are a 400; a NULL
    (None) or empty one in the properties means "not given", as NULL does in Oracle."""
    if not isinstance(properties, dict) or "password" not in properties:
        return properties, password
    props = dict(properties)
    given = props.pop("password")
    if given is None or given == "":
        return props, password
    if not isinstance(given, str):
        raise DomainError("The password must be text.", field="properties.password")
    if password not in (NO_CHANGE, None, "") and password != given:
        raise DomainError(
            "Two different passwords were given (password and properties.password); give it once.",
            field="properties.password",
        )
    return props, given


# Table C-3: a link's server is fixed; another server is another link.
_FIXED_PROPERTIES = ("host", "port")


def _driver_props(link_type: str, properties: dict[str, Any]) -> dict[str, Any]:
    try:
        cls = driver_class(link_type)
    except ValueError as exc:
        raise DomainError(str(exc), field="link_type") from exc
    if not isinstance(properties, dict):
        raise DomainError("Properties must be an object of name/value pairs.", field="properties")
    props = dict(properties)
    if "password" in props:  # the callers took it out (_password_from_properties)
        raise DomainError("The password is not a stored property.", field="properties.password")
    try:
        return cls.validate_properties(props)
    except PropertyError as exc:
        raise DomainError(str(exc), field=f"properties.{exc.field}") from exc


def _link_options(link_type: str, options: Any) -> dict[str, str]:
    if options in (None, ""):
        return {}
    if not isinstance(options, dict):
        raise DomainError("Options must be an object of name/value pairs.", field="options")
    known = driver_class(link_type).link_options
    unknown = sorted(set(options) - set(known))
    if unknown:
        names = ", ".join(sorted(known)) or "none"
        raise DomainError(
            f"{link_type} links take no option {unknown[0]} (known: {names}).", field="options"
        )
    return {str(k): str(v) for k, v in options.items()}


def _check_log_queue(link_type: str, name: str) -> str:
    name = (name or "").strip()
    if name:
        try:
            driver_class(link_type).validate_queue_name(name, Domain.QUEUE)
        except PropertyError as exc:
            raise DomainError(str(exc), field="outbound_log_queue") from exc
    return name


@transaction.atomic
def link_create(
    *,
    user: User,
    name: str,
    link_type: str,
    properties: dict[str, Any],
    password: str = "",
    agent: Agent | None = None,
    options: dict[str, str] | None = None,
    max_connections: int = 1,
    outbound_log_queue: str = "",
    comment: str = "",
) -> Link:
    """CREATE_MSGSYSTEM_LINK: properties validated for the type by its driver; the agent is
    fixed from now on (default DEFAULT_AGENT)."""
    _require(user, Capability.CONFIGURE)
    name = _upper_name(name, field="linkname")
    properties, password = _password_from_properties(properties, password)
    link_type = (link_type or "").strip().upper()
    if link_type not in LinkType.values:
        raise DomainError(
            f"Unknown link type {link_type!r}; use one of {', '.join(LinkType.values)}.",
            field="link_type",
        )
    if Link.objects.filter(name=name).exists():
        raise Conflict(f"Link {name} already exists.", field="linkname")
    if DatabaseLink.objects.filter(name=name).exists():
        # One namespace with the database links (sites app): QUEUE@NAME names one link.
        raise Conflict(
            f"{name} is already a database link: QUEUE@{name} must name one link.",
            field="linkname",
        )
    if not isinstance(max_connections, int) or not 1 <= max_connections <= 64:
        raise DomainError("max_connections must be between 1 and 64.", field="max_connections")
    link = Link(
        name=name,
        agent=agent or ensure_default_agent(),
        link_type=link_type,
        properties=_driver_props(link_type, properties),
        password_encrypted=crypto.encrypt(password or ""),
        options=_link_options(link_type, options),
        max_connections=max_connections,
        outbound_log_queue=_check_log_queue(link_type, outbound_log_queue),
        comment=comment,
    )
    link.full_clean()
    link.save()
    _log(user, ChangeAction.CREATE, "create_msgsystem_link", link, after=_snapshot(link))
    lifecycle.notify_agent(link.agent_id)
    return link


@transaction.atomic
def link_alter(
    *,
    user: User,
    link: Link,
    properties: Any = NO_CHANGE,
    password: Any = NO_CHANGE,
    options: Any = NO_CHANGE,
    max_connections: Any = NO_CHANGE,
    outbound_log_queue: Any = NO_CHANGE,
    comment: Any = NO_CHANGE,
) -> Link:
    """ALTER_MSGSYSTEM_LINK: given properties are merged over the current ones and validated
    again; the agent, type, host and port never change (Table C-3: another server is a new
    link); the log queue is locked while an outbound job uses the link. A password inside
    ``properties`` is the link's password."""
    _require(user, Capability.CONFIGURE)
    ln = Link.objects.select_for_update().get(pk=link.pk)
    before = _snapshot(ln)
    if properties is not NO_CHANGE:
        if not isinstance(properties, dict):
            raise DomainError("Properties must be an object.", field="properties")
        if "agent" in properties or "link_type" in properties:
            raise DomainError("A link's agent and type are fixed at creation.", field="properties")
        properties, password = _password_from_properties(properties, password)
        cleaned = _driver_props(ln.link_type, {**ln.properties, **properties})
        for fixed in _FIXED_PROPERTIES:
            now, was = cleaned.get(fixed), ln.properties.get(fixed)
            if fixed in properties and str(now).lower() != str(was).lower():
                raise DomainError(
                    f"A link's {fixed} cannot be altered (it is {was}; Table C-3): create a new "
                    "link for another server.",
                    field=f"properties.{fixed}",
                )
        ln.properties = cleaned
    if password is not NO_CHANGE:
        ln.password_encrypted = crypto.encrypt(password or "")
    if options is not NO_CHANGE:
        ln.options = _link_options(ln.link_type, options)
    if max_connections is not NO_CHANGE:
        if not isinstance(max_connections, int) or not 1 <= max_connections <= 64:
            raise DomainError("max_connections must be between 1 and 64.", field="max_connections")
        ln.max_connections = max_connections
    if outbound_log_queue is not NO_CHANGE:
        new = _check_log_queue(ln.link_type, outbound_log_queue)
        if new != ln.outbound_log_queue and ln.jobs.filter(direction=Direction.OUTBOUND).exists():
            raise Conflict(
                "The outbound log queue cannot change while an outbound job uses this link.",
                field="outbound_log_queue",
            )
        ln.outbound_log_queue = new
    if comment is not NO_CHANGE:
        ln.comment = comment or ""
    ln.full_clean()
    ln.save()
    _log(user, ChangeAction.UPDATE, "alter_msgsystem_link", ln, before, _snapshot(ln))
    lifecycle.notify_agent(ln.agent_id)
    return ln


@transaction.atomic
def link_option_set(*, user: User, link: Link, name: str, value: str) -> Link:
    """SET_OPTION(MSGLINK_OPTION)."""
    return link_alter(user=user, link=link, options={**link.options, name: value})


@transaction.atomic
def link_option_remove(*, user: User, link: Link, name: str) -> Link:
    if name not in link.options:
        raise NotFound(f"Link {link.name} has no option {name}.", field="name")
    return link_alter(
        user=user, link=link, options={k: v for k, v in link.options.items() if k != name}
    )


@transaction.atomic
def link_remove(*, user: User, link: Link) -> None:
    """REMOVE_MSGSYSTEM_LINK: refused while foreign queues are registered on it."""
    _require(user, Capability.CONFIGURE)
    ln = Link.objects.select_for_update().get(pk=link.pk)
    if ln.foreign_queues.exists():
        names = ", ".join(ln.foreign_queues.values_list("name", flat=True)[:5])
        raise Conflict(f"Link {ln.name} still has registered queues ({names}); unregister them.")
    before = _snapshot(ln)
    agent_id = ln.agent_id
    ln.delete()
    change_log_deletion(
        user=user, verb="remove_msgsystem_link", object_type="gateway.link", before=before
    )
    lifecycle.notify_agent(agent_id)


def link_test(*, user: User, link: Link) -> tuple[bool, str]:
    """Test connection: connect and authenticate; (True, server) or (False, why)."""
    _require(user, Capability.OPERATE)
    driver = link_driver(link, client_id=f"mgw-test-{uuid.uuid4().hex[:8]}")
    try:
        return True, driver.test()
    except ForeignError as exc:
        return False, str(exc)
    finally:
        # Closing a connection that never opened may raise; there is nothing to do about it.
        with contextlib.suppress(Exception):
            driver.close()


# --- foreign queues ------------------------------------------------------------------------------


def _queue_options(link: Link, options: Any) -> dict[str, str]:
    if options in (None, ""):
        return {}
    if not isinstance(options, dict):
        raise DomainError("Options must be an object of name/value pairs.", field="options")
    known = driver_class(link.link_type).queue_options
    unknown = sorted(set(options) - set(known))
    if unknown:
        names = ", ".join(sorted(known)) or "none"
        raise DomainError(
            f"{link.link_type} queues take no option {unknown[0]} (known: {names}).",
            field="options",
        )
    return {str(k): str(v) for k, v in options.items()}


@transaction.atomic
def foreign_queue_register(
    *,
    user: User,
    name: str,
    link: Link,
    provider_queue: str = "",
    domain: str = "",
    options: dict[str, str] | None = None,
    comment: str = "",
) -> ForeignQueue:
    """REGISTER_FOREIGN_QUEUE: records ``NAME@LINK`` and the provider's name; creates nothing in
    the foreign system."""
    _require(user, Capability.CONFIGURE)
    name = _upper_name(name, field="name")
    cls = driver_class(link.link_type)
    # No domain given: the system's first (QUEUE, or TOPIC where it has only topics).
    domain = (domain or cls.domains[0]).strip().upper()
    if domain not in Domain.values:
        raise DomainError(f"Domain must be QUEUE or TOPIC, not {domain!r}.", field="domain")
    if domain not in cls.domains:
        raise DomainError(
            f"{link.link_type} links take only {' or '.join(cls.domains)} queues.", field="domain"
        )
    provider = (provider_queue or "").strip() or name
    try:
        cls.validate_queue_name(provider, domain)
    except PropertyError as exc:
        raise DomainError(str(exc), field=exc.field) from exc
    if ForeignQueue.objects.filter(name=name, link=link).exists():
        raise Conflict(f"{name}@{link.name} is already registered.", field="name")
    fq = ForeignQueue(
        name=name,
        link=link,
        provider_queue=provider,
        domain=domain,
        options=_queue_options(link, options),
        comment=comment,
    )
    fq.full_clean()
    fq.save()
    _log(user, ChangeAction.CREATE, "register_foreign_queue", fq, after=_snapshot(fq))
    return fq


@transaction.atomic
def foreign_queue_unregister(*, user: User, foreign_queue: ForeignQueue) -> None:
    """UNREGISTER_FOREIGN_QUEUE: refused while a job uses it (source, destination or exception)."""
    _require(user, Capability.CONFIGURE)
    fq = ForeignQueue.objects.select_for_update().get(pk=foreign_queue.pk)
    users = Job.objects.filter(
        _q_any(source_foreign=fq, destination_foreign=fq, exception_foreign=fq)
    ).values_list("name", flat=True)
    if users:
        raise Conflict(f"{fq} is used by job {', '.join(users[:5])}; remove the job first.")
    before = _snapshot(fq)
    fq.delete()
    change_log_deletion(
        user=user,
        verb="unregister_foreign_queue",
        object_type="gateway.foreignqueue",
        before=before,
    )


def _q_any(**conditions: Any) -> Any:
    q = Q()
    for key, value in conditions.items():
        q |= Q(**{key: value})
    return q


def foreign_queue_lookup(text: str, *, field: str) -> ForeignQueue:
    """``NAME@LINK`` → the registered foreign queue."""
    name, sep, link = (text or "").strip().upper().partition("@")
    if not sep or not name or not link:
        raise DomainError(f"{text!r} is not a foreign queue (write NAME@LINK).", field=field)
    fq = ForeignQueue.objects.select_related("link").filter(name=name, link__name=link).first()
    if fq is None:
        raise DomainError(f"No foreign queue {name}@{link} is registered.", field=field)
    return fq


def _local_queue(text: str, *, field: str) -> Queue:
    name = (text or "").strip()
    if "@" in name:
        raise DomainError(
            f"{text!r} is a foreign queue; this end must be one of ours.", field=field
        )
    # Accept MGW's schema.queue form: our queues have no schema, the last part names the queue.
    name = name.rsplit(".", 1)[-1]
    q = Queue.objects.select_related("queue_table").filter(name__iexact=name).first()
    if q is None:
        raise DomainError(f"No queue named {text!r}.", field=field)
    return q


# --- jobs ----------------------------------------------------------------------------------------


def _job_options(link: Link, options: Any, *, base: dict[str, Any] | None = None) -> dict[str, str]:
    if options in (None, ""):
        return dict(base or {})
    if not isinstance(options, dict):
        raise DomainError("Options must be an object of name/value pairs.", field="options")
    system = driver_class(link.link_type).job_options
    merged = dict(base or {})
    for name, value in options.items():
        if value is None:  # ALTER_JOB's "remove this option"
            merged.pop(name, None)
            continue
        if name in JOB_OPTIONS:
            coerce(name, JOB_OPTIONS[name], value, field="options")
        elif name not in system:
            known = ", ".join(sorted({*JOB_OPTIONS, *system}))
            raise DomainError(
                f"Jobs on {link.link_type} links take no option {name} (known: {known}).",
                field="options",
            )
        merged[str(name)] = (
            str(value).upper() if str(value).upper() in ("TRUE", "FALSE") else str(value)
        )
    return merged


def _check_transformation(name: str) -> str:
    name = (name or "").strip().upper()
    if name and name not in getattr(settings, "MGW_TRANSFORMATIONS", {}):
        known = ", ".join(sorted(getattr(settings, "MGW_TRANSFORMATIONS", {}))) or "none"
        raise DomainError(
            f"{name} is not a registered transformation (MGW_TRANSFORMATIONS: {known}).",
            field="transformation",
        )
    return name


def _check_poll_interval(value: Any) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise DomainError("poll_interval is a number of seconds.", field="poll_interval") from None
    if not 0.1 <= seconds <= 3600:
        raise DomainError("poll_interval must be between 0.1 and 3600 s.", field="poll_interval")
    return seconds


def _check_rule(rule: str, source: Queue | None, direction: str) -> str:
    rule = (rule or "").strip()
    if not rule:
        return ""
    if direction == Direction.INBOUND:
        raise DomainError(
            "The foreign systems here have no message selectors: a rule is for outbound jobs.",
            field="rule",
        )
    assert source is not None
    if not source.queue_table.multiple_consumers:
        # §1.9.7: dequeue conditions are not supported for single-consumer native sources.
        raise DomainError(
            f"{source.name} is a single-consumer queue; a rule needs a multi-consumer source.",
            field="rule",
        )
    engine.rule_sql(rule, field="rule", prefix="mgw_")
    return rule


def _check_local_exception(queue: Queue, source: Queue) -> None:
    if queue.pk == source.pk:
        raise DomainError(
            "The exception queue cannot be the source queue.", field="exception_queue"
        )
    if queue.kind == QueueKind.EXCEPTION:
        raise DomainError(
            f"{queue.name} is an AQ exception queue, which takes no enqueues; use a normal queue.",
            field="exception_queue",
        )


def _check_foreign_exception(fq: ForeignQueue, source: ForeignQueue) -> None:
    if fq.pk == source.pk:
        raise DomainError(
            "The exception queue cannot be the source queue.", field="exception_queue"
        )
    if fq.link_id != source.link_id:
        raise DomainError(
            f"The exception queue must be on the source's messaging system (link "
            f"{source.link.name}), not {fq.link.name}.",
            field="exception_queue",
        )


def _refuse_if_pending(job: Job) -> None:
    if job.status == JobStatus.DELETE_PENDING:
        raise Conflict(
            f"Job {job.name} is DELETE_PENDING: only REMOVE_JOB applies to it.", field="status"
        )


@transaction.atomic
def job_create(
    *,
    user: User,
    job_name: str,
    propagation_type: str,
    source: str,
    destination: str,
    rule: str = "",
    transformation: str = "",
    exception_queue: str = "",
    poll_interval: float | None = None,
    options: dict[str, str] | None = None,
    enabled: bool = True,
    comments: str = "",
) -> Job:
    """CREATE_JOB. OUTBOUND: ``source`` is our queue, ``destination`` ``NAME@LINK``; INBOUND the
    other way round. A multi-consumer outbound source gets subscriber ``MGW_<job>`` (with the
    rule as its subscriber rule); nothing is created in the foreign system until the agent runs
    the job."""
    _require(user, Capability.CONFIGURE)
    name = _upper_name(job_name, field="job_name")
    direction = (propagation_type or "").strip().upper()
    if direction not in Direction.values:
        raise DomainError("propagation_type must be OUTBOUND or INBOUND.", field="propagation_type")
    if Job.objects.filter(name=name).exists():
        raise Conflict(f"Job {name} already exists.", field="job_name")
    job = Job(name=name, direction=direction, enabled=bool(enabled), comment=comments or "")
    if direction == Direction.OUTBOUND:
        src = _local_queue(source, field="source")
        dst = foreign_queue_lookup(destination, field="destination")
        if src.kind == QueueKind.EXCEPTION:
            raise DomainError(
                f"{src.name} is an exception queue; it cannot be a source.", field="source"
            )
        other = Job.objects.filter(source_queue=src).first()
        if other is not None:
            raise Conflict(
                f"Queue {src.name} is already the source of job {other.name} (one job per queue "
                "source).",
                field="source",
            )
        if src.propagations_out.exists() and not src.queue_table.multiple_consumers:
            raise Conflict(
                f"Queue {src.name} is single-consumer and a propagation already takes from it.",
                field="source",
            )
        job.link, job.source_queue, job.destination_foreign = dst.link, src, dst
        if exception_queue:
            exc = _local_queue(exception_queue, field="exception_queue")
            _check_local_exception(exc, src)
            job.exception_queue = exc
    else:
        src_f = foreign_queue_lookup(source, field="source")
        dst_q = _local_queue(destination, field="destination")
        if dst_q.kind == QueueKind.EXCEPTION:
            raise DomainError(
                f"{dst_q.name} is an exception queue; it takes no enqueues.", field="destination"
            )
        if src_f.domain == Domain.QUEUE:
            other = Job.objects.filter(source_foreign=src_f).first()
            if other is not None:
                raise Conflict(
                    f"{src_f} is a QUEUE already read by job {other.name} (one job per queue "
                    "source; TOPIC sources take several).",
                    field="source",
                )
        job.link, job.source_foreign, job.destination_queue = src_f.link, src_f, dst_q
        if exception_queue:
            exc_f = foreign_queue_lookup(exception_queue, field="exception_queue")
            _check_foreign_exception(exc_f, src_f)
            job.exception_foreign = exc_f
    job.rule = _check_rule(rule, job.source_queue, direction)
    job.transformation = _check_transformation(transformation)
    job.poll_interval = _check_poll_interval(poll_interval)
    job.options = _job_options(job.link, options)
    job.full_clean(exclude=["subscriber"])
    src_q = job.source_queue
    if src_q is not None and src_q.queue_table.multiple_consumers:
        sub_name = f"MGW_{name}"[:30]
        if src_q.subscribers.filter(name__iexact=sub_name).exists():
            raise Conflict(
                f"{src_q.name} already has a subscriber named {sub_name}.", field="job_name"
            )
        job.subscriber = queue_services.subscriber_add(
            user=None, queue=src_q, name=sub_name, rule=job.rule
        )
    job.save()
    _log(user, ChangeAction.CREATE, "create_job", job, after=_snapshot(job))
    lifecycle.notify_agent(job.link.agent_id)
    return job


@transaction.atomic
def job_alter(
    *,
    user: User,
    job: Job,
    rule: Any = NO_CHANGE,
    transformation: Any = NO_CHANGE,
    exception_queue: Any = NO_CHANGE,
    poll_interval: Any = 0,
    options: Any = NO_CHANGE,
    comments: Any = NO_CHANGE,
) -> Job:
    """ALTER_JOB: rule, transformation and exception queue change, clear ("") or stay
    (NO_CHANGE); poll_interval 0 keeps it, None resets it to the default, > 0 sets it; options
    are merged (a None value removes one). Works whether the agent runs or not."""
    _require(user, Capability.CONFIGURE)
    j = (
        Job.objects.select_for_update(of=("self",))
        .select_related("link", "source_queue__queue_table")
        .get(pk=job.pk)
    )
    _refuse_if_pending(j)
    before = _snapshot(j)
    if rule is not NO_CHANGE:
        j.rule = _check_rule(rule or "", j.source_queue, j.direction)
        if j.subscriber_id:
            Subscriber.objects.filter(pk=j.subscriber_id).update(rule=j.rule)
    if transformation is not NO_CHANGE:
        j.transformation = _check_transformation(transformation or "")
    if exception_queue is not NO_CHANGE:
        if not exception_queue:
            j.exception_queue = j.exception_foreign = None
        elif j.direction == Direction.OUTBOUND:
            exc = _local_queue(exception_queue, field="exception_queue")
            _check_local_exception(exc, j.source_queue)  # type: ignore[arg-type]
            j.exception_queue = exc
        else:
            exc_f = foreign_queue_lookup(exception_queue, field="exception_queue")
            _check_foreign_exception(exc_f, j.source_foreign)  # type: ignore[arg-type]
            j.exception_foreign = exc_f
    if poll_interval is None:
        j.poll_interval = None
    elif poll_interval != 0:
        j.poll_interval = _check_poll_interval(poll_interval)
    if options is not NO_CHANGE:
        j.options = _job_options(j.link, options, base=j.options)
    if comments is not NO_CHANGE:
        j.comment = comments or ""
    j.full_clean()
    j.save(update_fields=_JOB_CONFIG_FIELDS)
    _log(user, ChangeAction.UPDATE, "alter_job", j, before, _snapshot(j))
    lifecycle.notify_agent(j.link.agent_id)
    return j


# What ALTER_JOB writes; status, failures, back-off and recovery are gateway/lifecycle.py's.
_JOB_CONFIG_FIELDS = [
    "rule",
    "transformation",
    "exception_queue",
    "exception_foreign",
    "poll_interval",
    "options",
    "comment",
    "updated",
]


def _set_job(user: User, job: Job, verb: str, capability: str, *, enabled: bool) -> Job:
    """ENABLE_JOB / DISABLE_JOB."""
    _require(user, capability)
    j = Job.objects.select_for_update(of=("self",)).select_related("link").get(pk=job.pk)
    _refuse_if_pending(j)
    before, changes = {"enabled": j.enabled}, {"enabled": enabled}
    j.enabled = enabled
    j.save(update_fields=["enabled", "updated"])
    _log(user, ChangeAction.UPDATE, verb, j, before=_jsonable(before), after=_jsonable(changes))
    lifecycle.notify_agent(j.link.agent_id)
    return j


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in d.items()}


@transaction.atomic
def job_enable(*, user: User, job: Job) -> Job:
    """ENABLE_JOB."""
    return _set_job(user, job, "enable_job", Capability.OPERATE, enabled=True)


@transaction.atomic
def job_disable(*, user: User, job: Job) -> Job:
    """DISABLE_JOB: stops propagation; the subscription stays and messages keep accumulating."""
    return _set_job(user, job, "disable_job", Capability.OPERATE, enabled=False)


@transaction.atomic
def job_reset(*, user: User, job: Job) -> Job:
    """RESET_JOB: failures to 0, READY, and the agent retries at once."""
    _require(user, Capability.OPERATE)
    j = Job.objects.select_for_update(of=("self",)).select_related("link").get(pk=job.pk)
    _refuse_if_pending(j)
    before = {"status": j.status, "failures": j.failures, "recovery": j.recovery}
    lifecycle.job_reset(j.pk)
    j.refresh_from_db()
    after = {"status": j.status, "failures": j.failures, "recovery": j.recovery}
    _log(user, ChangeAction.UPDATE, "reset_job", j, before=before, after=after)
    lifecycle.notify_agent(j.link.agent_id)
    return j


@transaction.atomic
def job_remove(*, user: User, job: Job, force: bool = False) -> Job | None:
    """REMOVE_JOB. The job goes DELETE_PENDING; its agent, when it runs, removes the foreign
    subscription and log records and then the job (spec §1.9.5), retrying while the foreign
    system is down. ``force`` removes it at once, leaving what the foreign system holds.
    Returns the job while pending, None once gone."""
    _require(user, Capability.CONFIGURE)
    j = Job.objects.select_for_update(of=("self",)).select_related("link").get(pk=job.pk)
    if force:
        lifecycle.job_delete(j, user=user, verb="remove_job")
        return None
    before = {"status": j.status}
    lifecycle.job_mark_delete_pending(j.pk)
    j.refresh_from_db()
    _log(user, ChangeAction.UPDATE, "remove_job", j, before, {"status": j.status})
    lifecycle.notify_agent(j.link.agent_id)
    return j


def job_option_set(*, user: User, job: Job, name: str, value: str) -> Job:
    """SET_OPTION(JOB_OPTION)."""
    return job_alter(user=user, job=job, options={name: value})


def job_option_remove(*, user: User, job: Job, name: str) -> Job:
    if name not in job.options:
        raise NotFound(f"Job {job.name} has no option {name}.", field="name")
    return job_alter(user=user, job=job, options={name: None})


def ensure_default_agent() -> Agent:
    agent, _ = Agent.objects.get_or_create(name=DEFAULT_AGENT)
    return agent


# --- the reaper (beat) ---------------------------------------------------------------------------


def agents_reap() -> dict[str, int]:
    """A live-state agent whose process holds no lock and has not beaten for STALE_S died (a
    killed worker, a lost connection): gateway/lifecycle.py stops it (it was SHUTTING_DOWN) or
    schedules its start again after RESTART_DELAY_S, as MGW's Scheduler job after a restartable
    error. Due restarts are sent here too."""
    cfg = config()
    if Agent.objects.filter(status__in=[*AGENT_LIVE_STATES, AgentStatus.START_SCHEDULED]).exists():
        # Agents follow their queue tables' owners: see a failover within one reap, as the
        # propagation dispatcher does (serialized by the refresh's own lock).
        queue_services.queue_table_owners_refresh()
    now = timezone.now()
    live = live_agent_ids()
    died = restarted = held = 0
    for a in Agent.objects.filter(status__in=AGENT_LIVE_STATES):
        if a.pk in live:
            continue
        if a.heartbeat_at is not None and a.heartbeat_at > now - timedelta(seconds=cfg["STALE_S"]):
            continue
        with transaction.atomic():
            ended = lifecycle.agent_declare_dead(a.pk, a.start_token, now)
            if ended is None:
                continue  # it moved on meanwhile (shut down, restarted)
            AgentLogLine.objects.create(
                agent=a, session=a.start_time, severity="ERROR", component="reaper", text=ended[1]
            )
            died += 1
    for a in Agent.objects.filter(status=AgentStatus.START_SCHEDULED, restart_at__lte=now):
        if agent_place_missed_beats(a.pk):
            # Its owner instance has gone quiet (most likely the death that ended the agent):
            # keep the restart due and send it once the owner has moved or the instance beats
            # again, rather than into a queue nobody may read for START_RESEND_S.
            held += 1
            continue
        with transaction.atomic():
            token = lifecycle.agent_restart_due(a.pk, now)
            if token is not None:
                _send_start(a, token)
                restarted += 1
    return {"died": died, "restarted": restarted, "held": held}
