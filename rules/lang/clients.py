"""Which rule sets an Oracle Streams client may have (spec/rules.md §1.1, §7.1, §7.4 D17 to D18).

Pure checks over rule metadata, so the console can refuse a bad client configuration before it
exists. The propagations are the console's clients: ``rules.services.client_rule_sets_check``
runs :func:`check_client` when a propagation's rule sets are set, and ``rule_set_add_rule`` runs
it again when a rule joins a set a propagation already uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CAPTURE, SYNC_CAPTURE, PROPAGATION, APPLY, MESSAGING_CLIENT = (
    "CAPTURE",
    "SYNC_CAPTURE",
    "PROPAGATION",
    "APPLY",
    "MESSAGING_CLIENT",
)
CLIENT_TYPES = (CAPTURE, SYNC_CAPTURE, PROPAGATION, APPLY, MESSAGING_CLIENT)


class ClientConfigError(ValueError):
    """A client configuration Oracle refuses; ``field`` names the offending part."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class RuleMeta:
    """What the checks need to know of a rule: its name and how it was generated."""

    name: str
    streams_rule_type: str = ""  # GLOBAL, SCHEMA, TABLE, SUBSET, MESSAGE or "" (by hand)
    rule_type: str = ""  # DML, DDL or ""


def check_client(
    client_type: str,
    *,
    positive: Iterable[RuleMeta] | None,
    negative: Iterable[RuleMeta] | None,
) -> None:
    """Refuse what Oracle refuses: subset rules in a negative rule set (row migration makes them
    unpredictable there), a synchronous capture with a negative rule set, without a positive one,
    or with anything but table and subset DML rules, and message rules on a capture process."""
    if client_type not in CLIENT_TYPES:
        raise ClientConfigError(
            f"Unknown client type {client_type!r}; use one of {', '.join(CLIENT_TYPES)}.",
            field="client_type",
        )
    pos = list(positive) if positive is not None else None
    neg = list(negative) if negative is not None else None
    for rule in neg or ():
        if rule.streams_rule_type == "SUBSET":
            raise ClientConfigError(
                f"Subset rule {rule.name} cannot be in a negative rule set.",
                field="negative_rule_set",
            )
    if client_type == SYNC_CAPTURE:
        if neg is not None:
            raise ClientConfigError(
                "A synchronous capture has no negative rule set.", field="negative_rule_set"
            )
        if pos is None:
            raise ClientConfigError(
                "A synchronous capture needs a positive rule set.", field="positive_rule_set"
            )
        for rule in pos:
            if rule.streams_rule_type not in ("TABLE", "SUBSET") or rule.rule_type != "DML":
                raise ClientConfigError(
                    f"A synchronous capture takes only table and subset DML rules; "
                    f"{rule.name} is a {rule.streams_rule_type or 'hand-written'} "
                    f"{rule.rule_type or ''} rule.".replace("  ", " "),
                    field="positive_rule_set",
                )
    if client_type in (CAPTURE, SYNC_CAPTURE):
        for rule in (*(pos or ()), *(neg or ())):
            if rule.streams_rule_type == "MESSAGE":
                raise ClientConfigError(
                    f"Message rule {rule.name} cannot be used by a capture process.",
                    field="positive_rule_set",
                )
