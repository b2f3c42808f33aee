"""DBMS_MGWADM as Python: one function per procedure, Oracle's names and parameter names.

Each function is a thin call to one service of ``gateway/services.py`` with ``user=None`` (a
trusted script, like a DBA's SQL*Plus session). It translates Oracle's conventions (upper-cased
identifiers, ``schema.queue`` names, the BINARY_INTEGER constants below, ``NO_CHANGE`` and NULL,
``SYS.MGW_PROPERTIES`` lists) and nothing else; the services check and carry out everything.
Errors are the services' DomainError family, with ``.field`` renamed to this module's parameter
name and ``.procedure`` set to the Oracle procedure's name.

Python has no overloads: where Oracle has two forms of a procedure, the Python function takes the
union of their parameters by keyword (``agent_name`` defaults to ``DEFAULT_AGENT``). SHUTDOWN and
SET_LOG_LEVEL also accept Oracle's positional forms, told apart by type as PL/SQL does.

The ``python manage.py mgwadm`` command (gateway/management/commands/mgwadm.py) calls these, and
docs/gateway/mgwadm.md is the reference.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from core.exceptions import DomainError, NotFound
from core.storable import is_ascii_id
from gateway import services
from gateway.choices import (
    CleanupAction,
    Direction,
    Domain,
    LogLevel,
    OptionType,
    ShutdownMode,
)
from gateway.drivers import driver_class
from gateway.models import DEFAULT_AGENT as _DEFAULT_AGENT_NAME
from gateway.models import Agent, AgentOption, ForeignQueue, Job, Link

# --- constants (spec/gateway.md §2.1) ------------------------------------------------------------
# BINARY_INTEGER constants are small ints, as in PL/SQL, so that SHUTDOWN(sdmode) and
# SHUTDOWN(agent_name) can be told apart by type; the values are ours, use the names.

OUTBOUND_PROPAGATION = 0
INBOUND_PROPAGATION = 1

DOMAIN_QUEUE = 0
DOMAIN_TOPIC = 1

NO_FORCE = 0
FORCE = 1

SHUTDOWN_NORMAL = 0
SHUTDOWN_IMMEDIATE = 1

BASIC_LOGGING = 0
TRACE_LITE_LOGGING = 1
TRACE_HIGH_LOGGING = 2
TRACE_DEBUG_LOGGING = 3
TRACE_DEBUG_HIGH_LOGGING = 4

CLEAN_STARTUP_STATE = 1
CLEAN_LOG_QUEUES = 2
RESET_SUB_MISSING_LOG_REC = 3
RESET_SUB_MISSING_MESSAGE = 4

AGENT_JAVA_PROP = 1
MSGLINK_OPTION = 2
JOB_OPTION = 3

# VARCHAR2 constants.
JDBC_OCI = "JDBC_OCI"
JDBC_THIN = "JDBC_THIN"
DEFAULT_AGENT = _DEFAULT_AGENT_NAME
NO_CHANGE: Any = services.NO_CHANGE
MGWPROP_PREFIX = "MGWPROP$_"
MGWPROP_REMOVE = "MGWPROP$_REMOVE"
MGWPROP_REMOVE_ALL = "MGWPROP$_REMOVE_ALL"

# Which constants each BINARY_INTEGER parameter takes, and what the service calls them. The
# command line resolves constant names through this table too.
PARAMETER_CONSTANTS: dict[str, dict[str, tuple[int, Any]]] = {
    "propagation_type": {
        "OUTBOUND_PROPAGATION": (OUTBOUND_PROPAGATION, Direction.OUTBOUND),
        "INBOUND_PROPAGATION": (INBOUND_PROPAGATION, Direction.INBOUND),
    },
    "domain": {
        "DOMAIN_QUEUE": (DOMAIN_QUEUE, Domain.QUEUE),
        "DOMAIN_TOPIC": (DOMAIN_TOPIC, Domain.TOPIC),
    },
    "force": {"NO_FORCE": (NO_FORCE, False), "FORCE": (FORCE, True)},
    "sdmode": {
        "SHUTDOWN_NORMAL": (SHUTDOWN_NORMAL, ShutdownMode.NORMAL),
        "SHUTDOWN_IMMEDIATE": (SHUTDOWN_IMMEDIATE, ShutdownMode.IMMEDIATE),
    },
    # The constants' values are gateway.choices.LogLevel's; names or numbers are accepted.
    "log_level": {level.name: (level.value, level) for level in LogLevel},
    "action": {
        "CLEAN_STARTUP_STATE": (CLEAN_STARTUP_STATE, CleanupAction.CLEAN_STARTUP_STATE),
        "CLEAN_LOG_QUEUES": (CLEAN_LOG_QUEUES, CleanupAction.CLEAN_LOG_QUEUES),
        "RESET_SUB_MISSING_LOG_REC": (
            RESET_SUB_MISSING_LOG_REC,
            CleanupAction.RESET_SUB_MISSING_LOG_REC,
        ),
        "RESET_SUB_MISSING_MESSAGE": (
            RESET_SUB_MISSING_MESSAGE,
            CleanupAction.RESET_SUB_MISSING_MESSAGE,
        ),
    },
    "target_type": {
        "AGENT_JAVA_PROP": (AGENT_JAVA_PROP, OptionType.AGENT_JAVA_PROP),
        "MSGLINK_OPTION": (MSGLINK_OPTION, OptionType.MSGLINK_OPTION),
        "JOB_OPTION": (JOB_OPTION, OptionType.JOB_OPTION),
    },
}

# SYS.MGW_PROPERTIES: a dict, or a list of (name, value) pairs as the VARRAY is.
Properties = dict[str, Any] | list[tuple[str, Any]]


class NotSupported(DomainError):
    """A DBMS_MGWADM procedure or parameter value with no counterpart here."""

    status_code = 400
    code = "not_supported"


def _constant(param: str, value: Any) -> Any:
    """A BINARY_INTEGER constant (or its name) → the service's value; DomainError otherwise."""
    table = PARAMETER_CONSTANTS[param]
    for name, (number, service_value) in table.items():
        matches_number = isinstance(value, int) and not isinstance(value, bool) and value == number
        if matches_number or (isinstance(value, str) and value.strip().upper() == name):
            return service_value
    names = ", ".join(sorted({n for n, (v, _) in table.items()}, key=lambda n: table[n][0]))
    raise DomainError(f"{value!r} is not one of DBMS_MGWADM's constants {names}.", field=param)


def _name(value: Any, param: str) -> str:
    """An unquoted Oracle identifier: trimmed and upper-cased (services upper-case too; the
    lookups here need it first)."""
    if not isinstance(value, str) or not value.strip():
        raise DomainError("A name is required.", field=param)
    return value.strip().upper()


def _none_only(param: str, value: Any, why: str) -> None:
    """Oracle parameters with no counterpart here: accepted only when NULL (or NO_CHANGE)."""
    if value is not None and value is not NO_CHANGE:
        raise NotSupported(f"{param} must be NULL here: {why}", field=param)


def _text(value: Any) -> Any:
    """VARCHAR2 IN parameter → service value: NO_CHANGE stays, NULL becomes ''."""
    if value is NO_CHANGE:
        return NO_CHANGE
    return "" if value is None else value


_DATABASE_WHY = (
    "the agent connects to this console's own PostgreSQL database (DATABASE_URL); there is no "
    "connect string to give."
)
_CONNTYPE_WHY = "the agent connects with psycopg 3, not a JDBC OCI or Thin driver."
_INITFILE_WHY = (
    "agent settings come from the console's settings (MGW_*) and SET_OPTION(AGENT_JAVA_PROP); "
    "there is no mgw.ora."
)


def _fold_options(options: Properties | None, current: dict[str, Any]) -> dict[str, Any]:
    """SYS.MGW_PROPERTIES merged into ``current`` as MGW does (§2.2): each element adds or
    replaces one property; MGWPROP$_REMOVE (value: a name) removes one, MGWPROP$_REMOVE_ALL
    removes all; a None value removes that name (the Python spelling)."""
    if options is None:
        return dict(current)
    if isinstance(options, dict):
        pairs: Iterable[tuple[str, Any]] = options.items()
    elif isinstance(options, list | tuple):
        try:
            pairs = [(str(n), v) for n, v in options]
        except (TypeError, ValueError):
            raise DomainError(
                "options is a list of (name, value) pairs or a dict.", field="options"
            ) from None
    else:
        raise DomainError("options is a list of (name, value) pairs or a dict.", field="options")
    merged = dict(current)
    for name, value in pairs:
        upper = name.upper()
        if upper == MGWPROP_REMOVE_ALL:
            merged.clear()
        elif upper == MGWPROP_REMOVE:
            merged.pop(str(value), None)
        elif value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def _delta(current: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    """The merged options as a job_alter change (it merges itself): what changed, and None for
    each removed name."""
    changed = {k: v for k, v in merged.items() if k not in current or current[k] != v}
    return {**{k: None for k in current if k not in merged}, **changed}


# --- lookups -------------------------------------------------------------------------------------


def _agent(agent_name: Any, param: str = "agent_name") -> Agent:
    name = _name(agent_name, param)
    agent = Agent.objects.filter(name=name).first()
    if agent is None:
        raise NotFound(f"There is no agent {name}.", field=param)
    return agent


def _link(linkname: Any, param: str = "linkname") -> Link:
    name = _name(linkname, param)
    link = Link.objects.select_related("agent").filter(name=name).first()
    if link is None:
        raise NotFound(f"There is no messaging system link {name}.", field=param)
    return link


def _job(job_name: Any, param: str = "job_name") -> Job:
    name = _name(job_name, param)
    job = Job.objects.select_related("link").filter(name=name).first()
    if job is None:
        raise NotFound(f"There is no propagation job {name}.", field=param)
    return job


def _foreign_queue(name: Any, linkname: Any) -> ForeignQueue:
    link = _link(linkname)
    queue_name = _name(name, "name")
    fq = ForeignQueue.objects.filter(name=queue_name, link=link).first()
    if fq is None:
        raise NotFound(f"No foreign queue {queue_name}@{link.name} is registered.", field="name")
    return fq


# --- the procedure wrapper -----------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])

# Procedure name (lower case) → function; the command line's table of procedures.
PROCEDURES: dict[str, Callable[..., Any]] = {}


def _first_error(exc: ValidationError) -> tuple[str | None, str]:
    if hasattr(exc, "error_dict"):
        field, errors = next(iter(exc.message_dict.items()))
        return (None if field == NON_FIELD_ERRORS else field), errors[0]
    return None, exc.messages[0]


def procedure(fields: dict[str, str] | None = None) -> Callable[[F], F]:
    """Register a DBMS_MGWADM procedure; its DomainErrors name this function's parameters
    (``fields`` maps the service's field names to them) and the procedure."""
    renames = dict(fields or {})

    def wrap(fn: F) -> F:
        params = list(inspect.signature(fn).parameters)
        # A "status" error (the object's state) is about the object the call names.
        renames.setdefault(
            "status",
            next((p for p in params if p in ("name", "linkname") or p.endswith("_name")), ""),
        )

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except DomainError as exc:
                if exc.field in renames:
                    exc.field = renames[exc.field] or None
                exc.procedure = fn.__name__.upper()  # type: ignore[attr-defined]
                raise
            except ValidationError as exc:
                # A model's full_clean (a name its validator refuses): the same ORA-style error
                # as a DomainError, naming the parameter, rather than a traceback.
                field, message = _first_error(exc)
                error = DomainError(message, field=field)
                if field == "name":
                    error.field = renames["status"] or None
                elif field in renames:
                    error.field = renames[field] or None
                error.procedure = fn.__name__.upper()  # type: ignore[attr-defined]
                raise error from exc

        PROCEDURES[fn.__name__] = call
        return call  # type: ignore[return-value]

    return wrap


# --- agents --------------------------------------------------------------------------------------


@procedure()
def create_agent(
    agent_name: str,
    username: str | None = None,
    password: str | None = None,
    database: str | None = None,
    conntype: str | None = None,
    max_memory: int | None = None,
    max_threads: int | None = None,
    service: str | None = None,
    initfile: str | None = None,
    comment: str | None = None,
) -> Agent:
    """CREATE_AGENT → services.agent_create. NULL max_memory/max_threads take the defaults (64 MB,
    1 thread); ``service`` is a queue's service name (DBA_SERVICES.NAME) whose owner instance
    runs the agent; database, conntype and initfile must be NULL."""
    _none_only("database", database, _DATABASE_WHY)
    _none_only("conntype", conntype, _CONNTYPE_WHY)
    _none_only("initfile", initfile, _INITFILE_WHY)
    numbers = {
        k: v for k, v in (("max_memory", max_memory), ("max_threads", max_threads)) if v is not None
    }
    return services.agent_create(
        user=None,
        name=_name(agent_name, "agent_name"),
        username=username or "",
        password=password or "",
        service=service or "",
        comment=comment or "",
        **numbers,
    )


@procedure()
def alter_agent(
    agent_name: str = DEFAULT_AGENT,
    username: str | None = NO_CHANGE,
    password: str | None = NO_CHANGE,
    database: str | None = NO_CHANGE,
    conntype: str | None = NO_CHANGE,
    max_memory: int | None = None,
    max_threads: int | None = None,
    service: str | None = NO_CHANGE,
    initfile: str | None = NO_CHANGE,
    comment: str | None = NO_CHANGE,
) -> Agent:
    """ALTER_AGENT → services.agent_alter. VARCHAR2 parameters left at NO_CHANGE and numbers left
    NULL stay as they are; username and password may not be NULL (as in Oracle); a NULL
    service clears it; database, conntype and initfile must be NO_CHANGE or NULL."""
    _none_only("database", database, _DATABASE_WHY)
    _none_only("conntype", conntype, _CONNTYPE_WHY)
    _none_only("initfile", initfile, _INITFILE_WHY)
    for param, value in (("username", username), ("password", password)):
        if value is None:
            raise DomainError(f"{param} may not be NULL; leave it NO_CHANGE.", field=param)
    return services.agent_alter(
        user=None,
        agent=_agent(agent_name),
        username=username,
        password=password,
        max_memory=NO_CHANGE if max_memory is None else max_memory,
        max_threads=NO_CHANGE if max_threads is None else max_threads,
        service=_text(service),
        comment=_text(comment),
    )


@procedure()
def remove_agent(agent_name: str) -> None:
    """REMOVE_AGENT → services.agent_remove (not DEFAULT_AGENT; its links removed and it stopped
    first)."""
    services.agent_remove(user=None, agent=_agent(agent_name))


@procedure()
def db_connect_info(username: str, password: str, database: str | None = None) -> Agent:
    """DB_CONNECT_INFO (deprecated; ALTER_AGENT of DEFAULT_AGENT) → services.agent_alter."""
    _none_only("database", database, _DATABASE_WHY)
    for param, value in (("username", username), ("password", password)):
        if value is None:
            raise DomainError(f"{param} may not be NULL.", field=param)
    return services.agent_alter(
        user=None, agent=_agent(DEFAULT_AGENT), username=username, password=password
    )


@procedure()
def startup(agent_name: str = DEFAULT_AGENT) -> Agent:
    """STARTUP → services.agent_startup (START_SCHEDULED; a worker on mgw.<AGENT_NAME> starts it).
    The deprecated STARTUP(instance, force) form is the default agent's: an int here means it,
    and is ignored as in 19c."""
    if isinstance(agent_name, int):
        agent_name = DEFAULT_AGENT
    return services.agent_startup(user=None, agent=_agent(agent_name))


@procedure({"shutdown_mode": "sdmode"})
def shutdown(sdmode: int | str = SHUTDOWN_NORMAL, agent_name: str = DEFAULT_AGENT) -> Agent:
    """SHUTDOWN → services.agent_shutdown. SHUTDOWN('myagent') (the named-agent form) works too:
    a string in ``sdmode``'s place is the agent's name."""
    if isinstance(sdmode, str) and sdmode.strip().upper() not in PARAMETER_CONSTANTS["sdmode"]:
        sdmode, agent_name = SHUTDOWN_NORMAL, sdmode
    return services.agent_shutdown(
        user=None, agent=_agent(agent_name), mode=_constant("sdmode", sdmode)
    )


@procedure()
def set_log_level(agent_name: str | int = DEFAULT_AGENT, log_level: int | None = None) -> Agent:
    """SET_LOG_LEVEL → services.agent_set_log_level (the agent must be RUNNING). The level is a
    constant (a number) or its name. SET_LOG_LEVEL(log_level) (the default agent's form) works
    too: a level in ``agent_name``'s place is the level."""
    if log_level is None and LogLevel.parse(agent_name) is not None:
        agent_name, log_level = DEFAULT_AGENT, agent_name
    if log_level is None:
        raise DomainError(
            "log_level is required (BASIC_LOGGING … TRACE_DEBUG_HIGH_LOGGING).", field="log_level"
        )
    return services.agent_set_log_level(
        user=None, agent=_agent(agent_name), log_level=_constant("log_level", log_level)
    )


@procedure()
def cleanup_gateway(action: int, sarg: str | None = None, agent_name: str = DEFAULT_AGENT) -> Agent:
    """CLEANUP_GATEWAY → services.agent_cleanup. ``sarg`` is the job name for the RESET_SUB_*
    actions and NULL otherwise."""
    service_action = _constant("action", action)
    if sarg is not None and service_action in (
        CleanupAction.CLEAN_STARTUP_STATE,
        CleanupAction.CLEAN_LOG_QUEUES,
    ):
        raise DomainError(f"sarg must be NULL for {service_action}.", field="sarg")
    return services.agent_cleanup(
        user=None, agent=_agent(agent_name), action=service_action, sarg=sarg or ""
    )


# --- options (SET_OPTION / REMOVE_OPTION) --------------------------------------------------------


@procedure({"name": "option_name", "value": "option_value", "options": "option_name"})
def set_option(
    target_type: int,
    target_name: str,
    option_name: str,
    option_value: str | None,
    encrypted: bool = False,
) -> AgentOption | Link | Job:
    """SET_OPTION → services.agent_option_set (AGENT_JAVA_PROP), link_option_set
    (MSGLINK_OPTION) or job_option_set (JOB_OPTION). Only agent properties may be encrypted."""
    target = _constant("target_type", target_type)
    if not isinstance(option_name, str) or not option_name.strip():
        raise DomainError("option_name may not be NULL.", field="option_name")
    value = "" if option_value is None else str(option_value)
    if target == OptionType.AGENT_JAVA_PROP:
        return services.agent_option_set(
            user=None,
            agent=_agent(target_name, "target_name"),
            name=option_name,
            value=value,
            encrypted=bool(encrypted),
        )
    if encrypted:
        raise DomainError(f"encrypted must be FALSE for {target}.", field="encrypted")
    if target == OptionType.MSGLINK_OPTION:
        return services.link_option_set(
            user=None, link=_link(target_name, "target_name"), name=option_name, value=value
        )
    return services.job_option_set(
        user=None, job=_job(target_name, "target_name"), name=option_name, value=value
    )


@procedure({"name": "option_name", "options": "option_name"})
def remove_option(target_type: int, target_name: str, option_name: str) -> Link | Job | None:
    """REMOVE_OPTION → services.agent_option_remove, link_option_remove or job_option_remove."""
    target = _constant("target_type", target_type)
    if target == OptionType.AGENT_JAVA_PROP:
        services.agent_option_remove(
            user=None, agent=_agent(target_name, "target_name"), name=option_name
        )
        return None
    if target == OptionType.MSGLINK_OPTION:
        return services.link_option_remove(
            user=None, link=_link(target_name, "target_name"), name=option_name
        )
    return services.job_option_remove(
        user=None, job=_job(target_name, "target_name"), name=option_name
    )


# --- links ---------------------------------------------------------------------------------------

# Attributes of Oracle's link property types that are columns of the link, not driver
# properties (SYS.MGW_MQSERIES_PROPERTIES has max_connections and the log queues).
_LINK_COLUMNS = ("max_connections", "outbound_log_queue")
_LINK_FIELDS = {
    "link_type": "properties.link_type",
    "max_connections": "properties.max_connections",
    "outbound_log_queue": "properties.outbound_log_queue",
    "password": "properties.password",
}


def _split_properties(properties: Any, *, alter: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Link properties → (driver properties, service keyword arguments). In ALTER, attributes
    left NO_CHANGE or NULL stay as they are (alter_construct())."""
    if not isinstance(properties, dict):
        raise DomainError(
            "properties is a dict of the link type's properties (with link_type).",
            field="properties",
        )
    props = {str(k).lower(): v for k, v in properties.items()}
    if alter:
        props = {k: v for k, v in props.items() if v is not NO_CHANGE and v is not None}
    extra: dict[str, Any] = {}
    # A password stays in the properties: the service takes it out (services.link_create).
    for key in _LINK_COLUMNS:
        if key in props:
            value = props.pop(key)
            if key == "max_connections" and isinstance(value, str) and is_ascii_id(value.strip()):
                value = int(value)  # INTEGER attribute given as text (command line)
            extra[key] = value
    return props, extra


@procedure(_LINK_FIELDS)
def create_msgsystem_link(
    linkname: str,
    agent_name: str = DEFAULT_AGENT,
    properties: dict[str, Any] | None = None,
    options: Properties | None = None,
    comment: str | None = None,
) -> Link:
    """CREATE_MSGSYSTEM_LINK → services.link_create. ``properties`` are the link type's (its
    driver's) properties plus ``link_type`` (AMQP, MQTT, NATS, REDIS: Oracle chooses by the
    properties' object type); ``password`` is stored encrypted, ``max_connections`` and
    ``outbound_log_queue`` are the link's own, as in SYS.MGW_MQSERIES_PROPERTIES."""
    props, extra = _split_properties(properties, alter=False)
    link_type = props.pop("link_type", None)
    if not link_type:
        raise DomainError(
            "properties needs link_type (AMQP, MQTT, NATS or REDIS).", field="properties.link_type"
        )
    agent = _agent(agent_name or DEFAULT_AGENT)
    return services.link_create(
        user=None,
        name=_name(linkname, "linkname"),
        link_type=str(link_type),
        properties=props,
        agent=agent,
        options=_fold_options(options, {}),
        comment=comment or "",
        **extra,
    )


@procedure(_LINK_FIELDS)
def alter_msgsystem_link(
    linkname: str,
    properties: dict[str, Any] | None = None,
    options: Properties | None = None,
    comment: str | None = NO_CHANGE,
) -> Link:
    """ALTER_MSGSYSTEM_LINK → services.link_alter. Given properties are merged over the current
    ones (NO_CHANGE or NULL attributes stay); ``options`` is merged into the current options
    (NULL: unchanged); the link type and agent never change."""
    link = _link(linkname)
    kwargs: dict[str, Any] = {}
    if properties is not None:
        props, extra = _split_properties(properties, alter=True)
        if str(props.get("link_type", link.link_type)).upper() == link.link_type:
            props.pop("link_type", None)  # the same type: Oracle's matching overload
        if props:
            kwargs["properties"] = props
        kwargs.update(extra)
    if options is not None:
        # link_alter replaces the options; MGW merges them, so the merge is made here.
        kwargs["options"] = _fold_options(options, link.options)
    return services.link_alter(user=None, link=link, comment=_text(comment), **kwargs)


@procedure()
def remove_msgsystem_link(linkname: str) -> None:
    """REMOVE_MSGSYSTEM_LINK → services.link_remove (refused while queues are registered on it)."""
    services.link_remove(user=None, link=_link(linkname))


# --- foreign queues ------------------------------------------------------------------------------


@procedure()
def register_foreign_queue(
    name: str,
    linkname: str,
    provider_queue: str | None = None,
    domain: int | None = None,
    options: Properties | None = None,
    comment: str | None = None,
) -> ForeignQueue:
    """REGISTER_FOREIGN_QUEUE → services.foreign_queue_register. ``domain`` NULL: derived from
    the messaging system (QUEUE where it has queues, else TOPIC)."""
    link = _link(linkname)
    if domain is None:
        domains = driver_class(link.link_type).domains
        service_domain = Domain.QUEUE if Domain.QUEUE in domains else domains[0]
    else:
        service_domain = _constant("domain", domain)
    return services.foreign_queue_register(
        user=None,
        name=_name(name, "name"),
        link=link,
        provider_queue=provider_queue or "",
        domain=service_domain,
        options=_fold_options(options, {}),
        comment=comment or "",
    )


@procedure()
def unregister_foreign_queue(name: str, linkname: str) -> None:
    """UNREGISTER_FOREIGN_QUEUE → services.foreign_queue_unregister (refused while a job uses
    it)."""
    services.foreign_queue_unregister(user=None, foreign_queue=_foreign_queue(name, linkname))


# --- jobs ----------------------------------------------------------------------------------------


@procedure({"name": "job_name"})
def create_job(
    job_name: str,
    propagation_type: int,
    source: str,
    destination: str,
    rule: str | None = None,
    transformation: str | None = None,
    exception_queue: str | None = None,
    poll_interval: float | None = None,
    options: Properties | None = None,
    enabled: bool = True,
    comments: str | None = None,
) -> Job:
    """CREATE_JOB → services.job_create. Outbound: ``source`` is our queue (``schema.queue``
    accepted), ``destination`` ``NAME@LINK``; inbound the other way round."""
    return services.job_create(
        user=None,
        job_name=_name(job_name, "job_name"),
        propagation_type=_constant("propagation_type", propagation_type),
        source=source,
        destination=destination,
        rule=rule or "",
        transformation=transformation or "",
        exception_queue=exception_queue or "",
        poll_interval=poll_interval,
        options=_fold_options(options, {}),
        enabled=bool(enabled),
        comments=comments or "",
    )


@procedure()
def alter_job(
    job_name: str,
    rule: str | None = NO_CHANGE,
    transformation: str | None = NO_CHANGE,
    exception_queue: str | None = NO_CHANGE,
    poll_interval: float | None = 0,
    options: Properties | None = None,
    comments: str | None = NO_CHANGE,
) -> Job:
    """ALTER_JOB → services.job_alter. NULL clears rule, transformation and exception_queue,
    NO_CHANGE keeps them; poll_interval 0 keeps it, NULL resets it to the default; options are
    merged (NULL: unchanged)."""
    job = _job(job_name)
    return services.job_alter(
        user=None,
        job=job,
        rule=_text(rule),
        transformation=_text(transformation),
        exception_queue=_text(exception_queue),
        poll_interval=poll_interval,
        options=NO_CHANGE
        if options is None
        else _delta(job.options, _fold_options(options, job.options)),
        comments=_text(comments),
    )


@procedure()
def enable_job(job_name: str) -> Job:
    """ENABLE_JOB → services.job_enable."""
    return services.job_enable(user=None, job=_job(job_name))


@procedure()
def disable_job(job_name: str) -> Job:
    """DISABLE_JOB → services.job_disable."""
    return services.job_disable(user=None, job=_job(job_name))


@procedure()
def reset_job(job_name: str) -> Job:
    """RESET_JOB → services.job_reset."""
    return services.job_reset(user=None, job=_job(job_name))


@procedure()
def remove_job(job_name: str, force: int = NO_FORCE) -> Job | None:
    """REMOVE_JOB → services.job_remove. NO_FORCE: DELETE_PENDING until the agent has cleaned up
    (returns the job); FORCE: removed at once (returns None)."""
    return services.job_remove(user=None, job=_job(job_name), force=_constant("force", force))


# --- the deprecated subscriber and schedule API (old-style jobs) ---------------------------------


# The procedures above that only refuse (listed as such by ``mgwadm --list``).
UNSUPPORTED = frozenset(
    {
        "add_subscriber",
        "alter_subscriber",
        "remove_subscriber",
        "reset_subscriber",
        "schedule_propagation",
        "alter_propagation_schedule",
        "enable_propagation_schedule",
        "disable_propagation_schedule",
        "unschedule_propagation",
    }
)


def _old_style(name: str) -> NotSupported:
    return NotSupported(
        f"{name} is not supported: old-style subscriber/schedule pairs are not built here "
        "(spec §1.9.6); use create_job, alter_job, enable_job, disable_job, reset_job and "
        "remove_job."
    )


@procedure()
def add_subscriber(
    subscriber_id: str,
    propagation_type: int,
    queue_name: str,
    destination: str,
    rule: str | None = None,
    transformation: str | None = None,
    exception_queue: str | None = None,
    options: Properties | None = None,
) -> None:
    """ADD_SUBSCRIBER: not supported; use CREATE_JOB."""
    raise _old_style("ADD_SUBSCRIBER")


@procedure()
def alter_subscriber(
    subscriber_id: str,
    rule: str | None = NO_CHANGE,
    transformation: str | None = NO_CHANGE,
    exception_queue: str | None = NO_CHANGE,
    options: Properties | None = None,
) -> None:
    """ALTER_SUBSCRIBER: not supported; use ALTER_JOB."""
    raise _old_style("ALTER_SUBSCRIBER")


@procedure()
def remove_subscriber(subscriber_id: str, force: int = NO_FORCE) -> None:
    """REMOVE_SUBSCRIBER: not supported; use REMOVE_JOB."""
    raise _old_style("REMOVE_SUBSCRIBER")


@procedure()
def reset_subscriber(subscriber_id: str) -> None:
    """RESET_SUBSCRIBER: not supported; use RESET_JOB."""
    raise _old_style("RESET_SUBSCRIBER")


@procedure()
def schedule_propagation(
    schedule_id: str,
    propagation_type: int,
    source: str,
    destination: str,
    start_time: str | None = None,
    duration: float | None = None,
    next_time: str | None = None,
    latency: float | None = None,
) -> None:
    """SCHEDULE_PROPAGATION: not supported; use CREATE_JOB (latency is its poll_interval)."""
    raise _old_style("SCHEDULE_PROPAGATION")


@procedure()
def alter_propagation_schedule(
    schedule_id: str,
    duration: float | None = None,
    next_time: str | None = None,
    latency: float | None = None,
) -> None:
    """ALTER_PROPAGATION_SCHEDULE: not supported; use ALTER_JOB (poll_interval)."""
    raise _old_style("ALTER_PROPAGATION_SCHEDULE")


@procedure()
def enable_propagation_schedule(schedule_id: str) -> None:
    """ENABLE_PROPAGATION_SCHEDULE: not supported; use ENABLE_JOB."""
    raise _old_style("ENABLE_PROPAGATION_SCHEDULE")


@procedure()
def disable_propagation_schedule(schedule_id: str) -> None:
    """DISABLE_PROPAGATION_SCHEDULE: not supported; use DISABLE_JOB."""
    raise _old_style("DISABLE_PROPAGATION_SCHEDULE")


@procedure()
def unschedule_propagation(schedule_id: str) -> None:
    """UNSCHEDULE_PROPAGATION: not supported; use REMOVE_JOB."""
    raise _old_style("UNSCHEDULE_PROPAGATION")
