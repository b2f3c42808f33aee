"""Writes of the definitions app: import a definitions document.

``definitions_import`` first compares the document with the topology (the plan: what it would
create, change and, with ``prune``, delete, field by field), then applies the plan in one
transaction through each app's own services, in dependency order (``kinds.KINDS``): creates and
changes first, then deletes in the reverse order. Any refusal rolls the whole import back and is
reported as the service's error at the document's path (``queues[3].queue_table``). A dry run
applies the plan too, then rolls it back: what it reports has passed every service's checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import transaction

from core import crypto
from core.choices import Capability, ChangeAction
from core.exceptions import DomainError, Forbidden
from core.roles import user_can
from core.services import change_log_record
from definitions.kinds import KINDS, SECRET, Key, Kind, Row
from definitions.selectors import ENCRYPTED, FORMAT, OMITTED, VERSION, definitions_rows
from queues.choices import QueueKind

User = AbstractBaseUser | AnonymousUser | None
MASK = crypto.MASK
HEADER = ("format", "version", "secrets")


@dataclass
class Change:
    action: str  # create, change or delete
    kind: str
    name: str  # the object's name as people write it (NAME, or NAME@QUEUE / NAME@LINK)
    path: str  # where it is in the document (none for a delete)
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # field → {from, to}
    # The object and its row when the plan was made (None for a create): not shown.
    obj: Any = field(default=None, repr=False, compare=False)
    row: Row | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "fields": self.fields,
        }


@dataclass
class Plan:
    changes: list[Change]
    prune: bool
    dry_run: bool = True
    applied: bool = False

    def as_dict(self) -> dict[str, Any]:
        counts = {
            a: sum(c.action == a for c in self.changes) for a in ("create", "change", "delete")
        }
        return {
            "dry_run": self.dry_run,
            "prune": self.prune,
            "applied": self.applied,
            "summary": counts,
            "changes": [c.as_dict() for c in self.changes],
        }


@dataclass
class _Item:
    kind: Kind
    path: str
    row: Row  # secrets opened (plain text), or left out


# --- reading the document ------------------------------------------------------------------------


def _open_secret(value: Any, *, path: str) -> str:
    """A secret as the document gives it: ``{"encrypted": token}`` or plain text."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, dict)
        and set(value) == {"encrypted"}
        and isinstance(value["encrypted"], str)
    ):
        try:
            return crypto.export_decrypt(value["encrypted"])
        except ValueError as exc:
            raise DomainError(str(exc), field=path) from exc
    raise DomainError('A secret is {"encrypted": "<token>"} or plain text.', field=path)


def _read_item(kind: Kind, raw: Any, path: str) -> Row:
    if not isinstance(raw, dict):
        raise DomainError(f"Each of {kind.name} is an object.", field=path)
    unknown = [k for k in raw if k not in kind.fields]
    if unknown:
        raise DomainError(
            f"Unknown field {unknown[0]!r} (known: {', '.join(kind.fields)}).",
            field=f"{path}.{unknown[0]}",
        )
    for key in kind.key_fields:
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise DomainError(f"{key} is required (text).", field=f"{path}.{key}")
    row = dict(raw)
    for name in kind.upper:
        if isinstance(row.get(name), str):
            row[name] = row[name].strip().upper()
    if SECRET in row:
        row[SECRET] = _open_secret(row[SECRET], path=f"{path}.{SECRET}")
    if isinstance(row.get("options"), list) and kind.name == "gateway_agents":
        options = []
        for i, opt in enumerate(row["options"]):
            if isinstance(opt, dict) and "value" in opt and opt.get("encrypted"):
                opt = {
                    **opt,
                    "value": _open_secret(opt["value"], path=f"{path}.options[{i}].value"),
                }
            options.append(opt)
        row["options"] = options
    return row


def _read(document: Any) -> list[_Item]:
    if not isinstance(document, dict):
        raise DomainError("A definitions document is a JSON object.", field="document")
    if document.get("format") != FORMAT:
        raise DomainError(f"format must be {FORMAT!r}.", field="format")
    if type(document.get("version")) is not int or document["version"] != VERSION:
        raise DomainError(
            f"This console reads version {VERSION} of the format, not {document.get('version')!r}.",
            field="version",
        )
    if document.get("secrets", ENCRYPTED) not in (ENCRYPTED, OMITTED):
        raise DomainError(f"secrets is {ENCRYPTED} or {OMITTED}.", field="secrets")
    known = {k.name for k in KINDS}
    for key in document:
        if key not in known and key not in HEADER:
            raise DomainError(f"Unknown section {key!r}.", field=key)
    items: list[_Item] = []
    for kind in KINDS:
        rows = document.get(kind.name, [])
        if not isinstance(rows, list):
            raise DomainError(f"{kind.name} is a list.", field=kind.name)
        seen: dict[Key, str] = {}
        for i, raw in enumerate(rows):
            path = f"{kind.name}[{i}]"
            row = _read_item(kind, raw, path)
            key = kind.key(row)
            if key in seen:
                raise DomainError(
                    f"{kind.label(key)} is already defined at {seen[key]}.", field=path
                )
            seen[key] = path
            items.append(_Item(kind, path, row))
    return items


# --- the plan ------------------------------------------------------------------------------------


def _shown(name: str, value: Any) -> Any:
    """A value as the plan shows it: never a secret."""
    if name == SECRET and value:
        return MASK
    if name == "options" and isinstance(value, list):
        return [
            {**o, "value": MASK}
            if isinstance(o, dict) and o.get("encrypted") and "value" in o
            else o
            for o in value
        ]
    return value


def _filled(kind: Kind, current: Row, row: Row) -> Row:
    """The document's row with the encrypted option values it left out (``secrets=omit``)
    taken from the topology: left out means unchanged."""
    if kind.name != "gateway_agents" or not isinstance(row.get("options"), list):
        return row
    have = {o["name"]: o for o in current.get("options", [])}
    options = [
        {**o, "value": have[o.get("name")]["value"]}
        if isinstance(o, dict) and "value" not in o and o.get("name") in have
        else o
        for o in row["options"]
    ]
    return {**row, "options": options}


def _differences(kind: Kind, current: Row, wanted: Row) -> dict[str, dict[str, Any]]:
    """Fields the document gives with another value. A field it leaves out stays as it is."""
    out = {}
    wanted = _filled(kind, current, wanted)
    for name in kind.fields:
        if name in kind.key_fields or name not in wanted:
            continue
        if wanted[name] != current.get(name):
            out[name] = {"from": _shown(name, current.get(name)), "to": _shown(name, wanted[name])}
    return out


def _plan(items: list[_Item], *, prune: bool) -> Plan:
    rows = definitions_rows()
    current: dict[str, dict[Key, tuple[Any, Row]]] = {
        kind.name: {kind.key(row): (obj, row) for obj, row in rows[kind.name]} for kind in KINDS
    }
    changes: list[Change] = []
    wanted: dict[str, set[Key]] = {kind.name: set() for kind in KINDS}
    for item in items:
        kind, key = item.kind, item.kind.key(item.row)
        wanted[kind.name].add(key)
        have = current[kind.name].get(key)
        if have is None:
            fields = {
                n: {"from": None, "to": _shown(n, v)}
                for n, v in item.row.items()
                if n not in kind.key_fields
            }
            changes.append(Change("create", kind.name, kind.label(key), item.path, fields))
            continue
        diff = _differences(kind, have[1], item.row)
        if diff:
            changes.append(Change("change", kind.name, kind.label(key), item.path, diff, *have))
    if prune:
        for kind in reversed(KINDS):
            for key, (obj, _row) in current[kind.name].items():
                if key not in wanted[kind.name] and not kind.skip_delete(obj):
                    changes.append(Change("delete", kind.name, kind.label(key), "", {}, obj, _row))
    return Plan(changes, prune)


# --- applying it ---------------------------------------------------------------------------------


class _DryRun(Exception):
    """Raised to roll a dry run back."""


def _at(path: str, exc: Exception) -> DomainError:
    """The service's refusal, placed at the document's path."""
    if isinstance(exc, DomainError):
        where = f"{path}.{exc.field}" if path and exc.field else (path or exc.field)
        # A name the document gives that does not exist is bad input at that path, not a 404.
        cls = DomainError if exc.status_code == 404 else type(exc)
        return cls(exc.message, field=where)
    if isinstance(exc, ValidationError):
        if hasattr(exc, "message_dict"):
            name, messages = next(iter(exc.message_dict.items()))
            where = path if name == "__all__" else f"{path}.{name}"
            return DomainError(" ".join(messages), field=where)
        return DomainError(" ".join(exc.messages), field=path)
    return DomainError(f"Invalid value: {exc}", field=path)


def _creation_order(item: _Item) -> int:
    # Exception queues first: other queues name them as their exception queue.
    exception = item.row.get("kind") == QueueKind.EXCEPTION
    return 0 if item.kind.name == "queues" and exception else 1


def _apply(user: User, items: list[_Item], plan: Plan) -> None:
    by_path = {c.path: c for c in plan.changes if c.action != "delete"}
    todo = sorted(
        (i for i in items if i.path in by_path),
        key=lambda i: (KINDS.index(i.kind), _creation_order(i)),
    )
    for item in todo:
        kind, change = item.kind, by_path[item.path]
        try:
            with transaction.atomic():
                if change.action == "change":
                    obj, current = change.obj, change.row
                else:
                    obj = kind.find(item.row)
                    if obj is None:
                        kind.create(user, item.row)
                        continue
                    # Made meanwhile by another create (a queue table's AQ$_<name>_E): its
                    # row as it is now, then the same comparison as the plan's.
                    current = next(r for o, r in kind.rows() if o.pk == obj.pk)
                assert current is not None
                row = _filled(kind, current, item.row)
                diff = {n: row[n] for n in _differences(kind, current, row)}
                if diff:
                    kind.update(user, obj, current, diff)
        # A value of the wrong type may fail inside a service before its own checks.
        except (DomainError, ValidationError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, Forbidden):
                raise
            raise _at(change.path, exc) from exc
    kinds = {k.name: k for k in KINDS}
    for change in plan.changes:
        if change.action != "delete":
            continue
        kind = kinds[change.kind]
        obj = type(change.obj).objects.filter(pk=change.obj.pk).first()
        if obj is None:
            continue  # went with its parent (a queue with its queue table)
        try:
            with transaction.atomic():
                kind.delete(user, obj)
        except DomainError as exc:
            raise type(exc)(
                f"Deleting {change.kind} {change.name}: {exc.message}", field=change.kind
            ) from exc


def definitions_import(
    *, user: User, document: Any, prune: bool = False, dry_run: bool = False
) -> Plan:
    """Import a definitions document (docs/DEFINITIONS.md): returns the plan (create, change,
    delete with the fields that change). Applied in one transaction through the apps' services,
    each recording its change-log row, plus one row for the import as a whole; with ``dry_run``
    everything is checked the same way and rolled back."""
    if user is not None and not user_can(user, Capability.CONFIGURE):
        raise Forbidden("Your role does not allow this.")
    items = _read(document)
    plan = _plan(items, prune=prune)
    plan.dry_run = dry_run
    try:
        with transaction.atomic():
            _apply(user, items, plan)
            if plan.changes:
                counts = plan.as_dict()["summary"]
                change_log_record(
                    user=user,
                    action=ChangeAction.ACTION,
                    verb="definitions_import",
                    object_type="definitions.document",
                    object_repr=f"definitions import ({', '.join(f'{n} {a}' for a, n in counts.items())})",
                    after={"prune": prune, **counts},
                )
            if dry_run:
                raise _DryRun
    except _DryRun:
        return plan
    plan.applied = True
    return plan
