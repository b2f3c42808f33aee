"""Bulk actions: one verb applied to many selected objects, each through its own single-object
service. The list pages (core.generic.bulk_page) and the API (``POST /api/<list>/bulk/``) both
call :func:`bulk_check` and :func:`bulk_run`; the registries (``<app>/bulk.py``) say which
service each verb calls, so no state rule is written here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from django.urls import reverse

from core.exceptions import DomainError, Forbidden
from core.roles import user_can

User = AbstractBaseUser | AnonymousUser

# As many as a list page shows at most (core.generic.BoundedPaginator.MAX_PER_PAGE).
MAX_IDS = 500
_MAX_ID = 2**63 - 1  # PostgreSQL's bigint: a larger id names no row and must not reach SQL


@dataclass(frozen=True)
class BulkAction:
    """One verb: the button's label, the capability the single-object action needs, and the
    call of that object's service (``run(user, obj)``)."""

    label: str
    capability: str
    run: Callable[[Any, Any], object]
    # What the confirmation page says the verb does.
    describe: str
    # Shown for each object it was done to; ``{result}`` is what the service returned.
    done: str
    destructive: bool = False


@dataclass(frozen=True)
class BulkActions:
    """The verbs of one list, and how to find and link its objects."""

    noun: str
    plural: str
    objects: Callable[[], QuerySet[Any]]
    actions: Mapping[str, BulkAction]
    list_url: str  # URL name of the list page
    detail_url: str  # URL name of an object's page (takes ``pk``)
    bulk_url: str  # URL name of the bulk page

    def allowed(self, user: User) -> dict[str, BulkAction]:
        """The verbs this user's role may use: the list page shows these buttons, no others."""
        return {k: a for k, a in self.actions.items() if user_can(user, a.capability)}


@dataclass(frozen=True)
class Outcome:
    """What happened to one object: done, or refused with the service's own message."""

    id: int
    name: str
    done: bool
    detail: str
    code: str = ""
    url: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "outcome": "done" if self.done else "refused",
            "detail": self.detail,
        }
        if not self.done:
            out["code"] = self.code
        return out


def _parse_ids(raw: object, *, noun: str) -> list[int]:
    """The selected ids as integers, in the order given, each once; a clear error otherwise."""
    if raw is None or raw == "" or raw == []:
        raise DomainError(f"Select at least one {noun}.", field="ids")
    if isinstance(raw, str | int) and not isinstance(raw, bool):
        raw = [raw]
    if not isinstance(raw, list | tuple):
        raise DomainError("Give the ids as a list of integers.", field="ids")
    if len(raw) > MAX_IDS:
        raise DomainError(f"At most {MAX_IDS} ids at once; {len(raw)} were given.", field="ids")
    ids: list[int] = []
    for item in raw:
        if isinstance(item, str) and item.isascii() and item.strip().isdigit():
            value: object = int(item.strip())
        else:
            value = item
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_ID:
            raise DomainError(f"{str(item)[:40]!r} is not an id.", field="ids")
        if value not in ids:
            ids.append(value)
    return ids


def bulk_check(
    registry: BulkActions, *, user: User, action: object, ids: object
) -> tuple[BulkAction, list[Model]]:
    """Refuse (403) a user who may use none of the verbs, or not this one; refuse (400, naming
    the field) an unknown verb or ids that are missing, malformed or name no object. Returns
    the verb and the objects, in the order of ``ids``. Writes nothing."""
    allowed = registry.allowed(user)
    if not allowed:
        raise Forbidden("Your role does not allow this.")
    if not isinstance(action, str) or action not in registry.actions:
        known = ", ".join(registry.actions)
        said = "No action given" if action in (None, "") else f"Unknown action {str(action)[:40]!r}"
        raise DomainError(f"{said}; one of: {known}.", field="action")
    if action not in allowed:
        raise Forbidden("Your role does not allow this.")
    wanted = _parse_ids(ids, noun=registry.noun)
    found = registry.objects().in_bulk(wanted)
    missing = [str(i) for i in wanted if i not in found]
    if missing:
        raise DomainError(f"No {registry.noun} with id {', '.join(missing)}.", field="ids")
    return registry.actions[action], [found[i] for i in wanted]


def bulk_run(registry: BulkActions, *, user: User, action: object, ids: object) -> list[Outcome]:
    """Apply one verb to each selected object through its service, one object after the other.

    Each service call is its own transaction (callers must not wrap this in one): a refusal
    rolls back that object's call alone, and the next object is still tried. Errors other than
    a service's refusal are not refusals and propagate."""
    chosen, objects = bulk_check(registry, user=user, action=action, ids=ids)
    return [_run_one(registry, chosen, user, obj) for obj in objects]


def _run_one(registry: BulkActions, chosen: BulkAction, user: User, obj: Model) -> Outcome:
    name = str(obj)
    try:
        result = chosen.run(user, obj)
    except DomainError as exc:
        return Outcome(obj.pk, name, False, exc.message, exc.code, _url(registry, obj))
    except DjangoValidationError as exc:
        return Outcome(obj.pk, name, False, "; ".join(exc.messages), "invalid", _url(registry, obj))
    except ObjectDoesNotExist:
        # Dropped by someone else between the check and this object's turn.
        return Outcome(obj.pk, name, False, f"{name} no longer exists.", "not_found")
    return Outcome(obj.pk, name, True, chosen.done.format(result=result), url=_url(registry, obj))


def _url(registry: BulkActions, obj: Model) -> str:
    # A dropped object has no page left to link to.
    if not type(obj)._default_manager.filter(pk=obj.pk).exists():
        return ""
    return reverse(registry.detail_url, kwargs={"pk": obj.pk})


def outcome_counts(outcomes: Iterable[Outcome]) -> dict[str, int]:
    done = refused = 0
    for o in outcomes:
        done += o.done
        refused += not o.done
    return {"done": done, "refused": refused}
