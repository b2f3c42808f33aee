"""The option registries (spec §5.1 "option registries"): which names an agent, a link, a foreign
queue and a job take, their defaults and allowed values. Services validate with these; pages
show their help."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.exceptions import DomainError


@dataclass(frozen=True)
class Option:
    help: str
    default: Any = None
    kind: str = "str"  # "str", "int", "bool"
    low: int | None = None
    high: int | None = None
    dynamic: bool = True  # False: takes effect at the agent's next start


# Agent options (MGW_AGENT_OPTIONS, type AGENT_JAVA_PROP): the mgw.ora properties that mean
# something here. Other names are kept and shown but do nothing (as MGW ignores unknown ones).
AGENT_OPTIONS: dict[str, Option] = {
    "oracle.mgw.batch_size": Option(
        "Default MsgBatchSize of the agent's jobs.", 30, "int", 1, 100, dynamic=False
    ),
    "oracle.mgw.polling_interval": Option(
        "Default polling interval of the agent's jobs, in milliseconds.",
        5000,
        "int",
        100,
        60000,
        dynamic=False,
    ),
}

# Job options common to every system (§1.9.8).
JOB_OPTIONS: dict[str, Option] = {
    "MsgBatchSize": Option("Most messages propagated in one transaction.", 30, "int", 1, 100),
    "PreserveMessageID": Option(
        "Outbound: send our message id as the foreign message id. Inbound: keep the foreign "
        "message id in header mgw_foreign_msgid.",
        False,
        "bool",
    ),
}


def coerce(name: str, option: Option, value: Any, *, field: str, secret: bool = False) -> Any:
    """The value as the option's kind, or DomainError naming the option. A ``secret`` value (an
    encrypted option) is never quoted back in the error."""
    shown = "the value given" if secret else repr(value)
    if option.kind == "bool":
        text = str(value).strip().upper()
        if isinstance(value, bool):
            return value
        if text not in ("TRUE", "FALSE"):
            raise DomainError(f"Option {name} takes TRUE or FALSE, not {shown}.", field=field)
        return text == "TRUE"
    if option.kind == "int":
        try:
            number = int(str(value).strip())
        except ValueError:
            raise DomainError(
                f"Option {name} takes an integer, not {shown}.", field=field
            ) from None
        if (option.low is not None and number < option.low) or (
            option.high is not None and number > option.high
        ):
            raise DomainError(
                f"Option {name} must be between {option.low} and {option.high}, not "
                f"{'the value given' if secret else number}.",
                field=field,
            )
        return number
    return str(value)


def bool_option(options: dict[str, Any], name: str) -> bool:
    return str(options.get(name, "FALSE")).strip().upper() == "TRUE"
