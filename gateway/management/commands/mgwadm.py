"""``python manage.py mgwadm PROCEDURE --param value …``: DBMS_MGWADM from the shell.

PROCEDURE is a procedure of gateway/mgwadm.py in any case (``CREATE_JOB``, ``create_job``,
``DBMS_MGWADM.CREATE_JOB``); the parameters are Oracle's names (``--job_name`` or ``--job-name``,
``--job_name=J1``). Values:

- ``NULL`` is NULL; ``NO_CHANGE`` is DBMS_MGWADM.NO_CHANGE (ALTER_* procedures);
- BINARY_INTEGER parameters take the constant's name (``--propagation_type OUTBOUND_PROPAGATION``,
  ``--force FORCE``, ``--log_level TRACE_DEBUG_LOGGING``);
- numbers and booleans (TRUE/FALSE) are converted as the procedure's signature says;
- ``--properties`` and ``--options`` repeat as ``name=value``, or take one JSON object
  (``--options`` also a JSON list of [name, value] pairs, SYS.MGW_PROPERTIES' shape).

It prints one line saying what was done. A refused call prints an ORA-style message naming the
parameter on stderr and exits 1; an unknown procedure, parameter or constant exits 2 listing the
valid ones. ``mgwadm --list`` prints every procedure with its parameters.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import crypto
from core.exceptions import Conflict, DomainError, Forbidden, NotFound
from gateway import mgwadm
from gateway.choices import LogLevel
from gateway.models import Agent, AgentOption, ForeignQueue, Job, Link

# ORA-style numbers per error class (the application-error range PL/SQL wrappers use).
_ORA = {NotFound: 20002, Conflict: 20001, Forbidden: 20003, mgwadm.NotSupported: 20004}
_DICT_PARAMS = ("properties", "options")


class _Usage(Exception):
    """Bad command line: exit status 2."""


def _flag(param: str) -> str:
    return f"--{param}"


def _signature(name: str, fn: Callable[..., Any]) -> str:
    parts = []
    for param in inspect.signature(fn).parameters.values():
        if param.default is inspect.Parameter.empty:
            parts.append(param.name)
        else:
            parts.append(f"{param.name}=>{_show_default(param.name, param.default)}")
    line = f"{name.upper()}({', '.join(parts)})"
    return line + ("  -- not supported" if name in mgwadm.UNSUPPORTED else "")


def _show_default(param: str, value: Any, *, quote: bool = True) -> str:
    if value is None:
        return "NULL"
    if value is mgwadm.NO_CHANGE:
        return "NO_CHANGE"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    for constant, (number, _) in mgwadm.PARAMETER_CONSTANTS.get(param, {}).items():
        if number == value:
            return constant
    return repr(value) if quote and isinstance(value, str) else str(value)


def _kinds(annotation: Any) -> set[type]:
    """The plain types an annotation allows (``int | None`` → {int, NoneType})."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return set().union(*(_kinds(a) for a in typing.get_args(annotation)))
    origin = typing.get_origin(annotation)
    return {origin or annotation} if isinstance(origin or annotation, type) else {object}


def _convert(param: str, text: str, annotation: Any, default: Any) -> Any:
    """One command-line value → the facade's argument, as its signature says."""
    upper = text.strip().upper()
    if upper == "NULL":
        return None
    if upper == "NO_CHANGE" and default is mgwadm.NO_CHANGE:
        return mgwadm.NO_CHANGE
    constants = mgwadm.PARAMETER_CONSTANTS.get(param)
    if constants is not None:
        if upper in constants:
            return constants[upper][0]
        try:
            return int(text)
        except ValueError:
            raise _Usage(
                f"{_flag(param)}: {text!r} is not a constant; use one of {', '.join(constants)}."
            ) from None
    kinds = _kinds(annotation)
    if bool in kinds:
        if upper in ("TRUE", "FALSE"):
            return upper == "TRUE"
        raise _Usage(f"{_flag(param)} takes TRUE or FALSE, not {text!r}.")
    for kind in (int, float):
        if kind in kinds and str not in kinds:
            try:
                return kind(text)
            except ValueError:
                raise _Usage(f"{_flag(param)} takes a number, not {text!r}.") from None
    return text


def _add_pairs(param: str, text: str, into: list[tuple[str, Any]]) -> None:
    """``name=value`` or a JSON object/list for --properties and --options."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise _Usage(f"{_flag(param)}: not valid JSON ({exc.msg}).") from None
        if isinstance(value, dict):
            into.extend(value.items())
            return
        if isinstance(value, list) and all(
            isinstance(p, list | tuple) and len(p) == 2 for p in value
        ):
            into.extend((str(n), v) for n, v in value)
            return
        raise _Usage(f"{_flag(param)}: JSON must be an object or a list of [name, value] pairs.")
    name, sep, value_text = text.partition("=")
    if not sep or not name.strip():
        raise _Usage(f"{_flag(param)} takes name=value (repeat it) or a JSON object, not {text!r}.")
    into.append((name.strip(), value_text))


def parse_parameters(fn: Callable[..., Any], tokens: list[str]) -> dict[str, Any]:
    """``--param value`` tokens → keyword arguments of ``fn``; _Usage on bad input."""
    signature = inspect.signature(fn)
    hints = typing.get_type_hints(inspect.unwrap(fn))
    valid = list(signature.parameters)
    raw: dict[str, Any] = {}
    pairs: dict[str, list[tuple[str, Any]]] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or token == "--":
            raise _Usage(f"Expected --parameter, got {token!r}. Parameters: {_listing(valid)}.")
        name, eq, value = token[2:].partition("=")
        name = name.replace("-", "_").lower()
        if name not in signature.parameters:
            raise _Usage(f"Unknown parameter --{name}. Parameters: {_listing(valid)}.")
        if not eq:
            if i + 1 >= len(tokens):
                raise _Usage(f"{_flag(name)} needs a value.")
            i += 1
            value = tokens[i]
        i += 1
        if name in _DICT_PARAMS:
            _add_pairs(name, value, pairs.setdefault(name, []))
            continue
        if name in raw:
            raise _Usage(f"{_flag(name)} is given twice.")
        param = signature.parameters[name]
        raw[name] = _convert(name, value, hints.get(name), param.default)
    for name, collected in pairs.items():
        # properties is an object; options keeps SYS.MGW_PROPERTIES' list (MGWPROP$_REMOVE may
        # repeat).
        raw[name] = dict(collected) if name == "properties" else collected
    missing = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty and p.name not in raw
    ]
    if missing:
        raise _Usage(
            f"Missing {', '.join(_flag(m) for m in missing)}. Parameters: {_listing(valid)}."
        )
    return raw


def _listing(params: list[str]) -> str:
    return " ".join(_flag(p) for p in params)


def describe(result: Any) -> str:
    """What a procedure returned, with its state, for the one-line report."""
    if isinstance(result, Agent):
        level = LogLevel(result.log_level).name
        return f"agent {result.name}: {result.status}, log level {level}"
    if isinstance(result, AgentOption):
        value = crypto.MASK if result.encrypted else result.value
        return f"agent {result.agent.name} option {result.name} = {value}"
    if isinstance(result, Link):
        return (
            f"link {result.name} ({result.link_type}, agent {result.agent.name}), "
            f"options {json.dumps(result.options, sort_keys=True)}"
        )
    if isinstance(result, ForeignQueue):
        return (
            f"foreign queue {result.name}@{result.link.name} (provider queue "
            f"{result.provider_queue}, {result.domain})"
        )
    if isinstance(result, Job):
        return (
            f"job {result.name}: {result.direction} {result.source_name} -> "
            f"{result.destination_name}, enabled {'TRUE' if result.enabled else 'FALSE'}, "
            f"status {result.status}"
        )
    return "done"


def ora_message(exc: DomainError, procedure: str) -> str:
    number = next((n for cls, n in _ORA.items() if isinstance(exc, cls)), 20000)
    where = f"DBMS_MGWADM.{procedure}"
    if exc.field:
        where += f"({exc.field})"
    return f"ORA-{number}: {where}: {exc.message}"


class Command(BaseCommand):
    help = "Run a DBMS_MGWADM procedure: mgwadm PROCEDURE --param value … (mgwadm --list)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--list", action="store_true", help="List the procedures.")
        parser.add_argument("procedure", nargs="?", help="e.g. CREATE_JOB or create_job")
        parser.add_argument(
            "params", nargs="...", help="--parameter value … (Oracle's parameter names)"
        )

    def _fail(self, message: str, code: int) -> None:
        # From the shell: the ORA-style line alone (CommandError would prefix its class name).
        if getattr(self, "_called_from_command_line", False):
            self.stderr.write(message)
            raise SystemExit(code)
        raise CommandError(message, returncode=code)

    def handle(self, *args: Any, **options: Any) -> None:
        procedures = mgwadm.PROCEDURES
        if options["list"]:
            for name, fn in sorted(procedures.items()):
                self.stdout.write(_signature(name, fn))
            return
        name = (options["procedure"] or "").strip().lower().removeprefix("dbms_mgwadm.")
        if name not in procedures:
            given = f"Unknown procedure {options['procedure']!r}" if name else "No procedure"
            self._fail(f"{given}. Procedures: {', '.join(sorted(procedures))}.", 2)
            return
        fn = procedures[name]
        try:
            kwargs = parse_parameters(fn, list(options["params"] or []))
        except _Usage as exc:
            self._fail(f"{name.upper()}: {exc}", 2)
            return
        try:
            result = fn(**kwargs)
        except DomainError as exc:
            self._fail(ora_message(exc, name.upper()), 1)
            return
        if result is None:
            # Nothing left to show (removed): say what the call named.
            named = ", ".join(
                f"{k}={crypto.MASK if 'password' in k else _show_default(k, v, quote=False)}"
                for k, v in kwargs.items()
            )
            self.stdout.write(f"{name.upper()}: done ({named})")
            return
        self.stdout.write(f"{name.upper()}: {describe(result)}")
