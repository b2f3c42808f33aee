"""Bulk actions: one verb applied to many objects, each through its own single-object service.
The list pages (core.generic.bulk_page) and the API (``POST /api/<list>/bulk/``) both call
:func:`bulk_check` and :func:`bulk_run`; the registries (``<app>/bulk.py``) say which service
each verb calls, so no state rule is written here. The objects are either ids (the rows ticked)
or a filter of the list (every object it matches when the action runs), resolved in one place:
:func:`resolve_targets`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from django.forms.utils import pretty_name
from django.http import QueryDict
from django.urls import reverse
from django.utils.text import capfirst
from django_filters import FilterSet

from core.exceptions import Conflict, DomainError, DomainErrors, Forbidden
from core.roles import user_can

User = AbstractBaseUser | AnonymousUser

# As many as a list page shows at most (core.generic.BoundedPaginator.MAX_PER_PAGE).
MAX_IDS = 500
_MAX_ID = 2**63 - 1  # PostgreSQL's bigint: a larger id names no row and must not reach SQL
# Query parameters of a list page or endpoint that page or sort it without changing what it
# matches: a filter copied from either may carry them; they are left out, not refused.
NOT_FILTERS = frozenset({"page", "per_page", "sort", "fragment", "ordering", "limit", "offset"})


def max_matching() -> int:
    """At most this many objects through one filter (``AQ_BULK_MAX``)."""
    return int(getattr(settings, "AQ_BULK_MAX", 10_000))


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
    # The list's FilterSet and the queryset it filters (the list page's and the list endpoint's
    # selector): "everything that matches" is what that list shows with that filter.
    filterset: type[FilterSet]
    listing: Callable[[], QuerySet[Any]]

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


class CountChanged(Conflict):
    """The filter no longer matches the number of objects the client saw (409): nothing done."""

    code = "count_changed"

    def __init__(self, message: str, *, count: int, expected: int) -> None:
        super().__init__(message, field="expected_count")
        self.count, self.expected = count, expected

    def as_dict(self) -> dict[str, Any]:
        return {
            "detail": self.message,
            "code": self.code,
            "count": self.count,
            "expected_count": self.expected,
        }


@dataclass(frozen=True)
class Targets:
    """The objects a bulk action is for, and, when they came from a filter, that filter (its
    query string and its terms in words, for the confirmation page)."""

    objects: list[Model]
    filter_query: str | None = None
    filter_words: tuple[str, ...] = ()


def _filter_data(raw: object) -> QueryDict:
    """A filter as the FilterSet reads it: the page's query string (a QueryDict), or the API's
    JSON object whose values are strings, numbers, booleans or lists of them (multiple choice)."""
    if isinstance(raw, QueryDict):
        return raw
    if not isinstance(raw, Mapping):
        raise DomainError(
            'Give the filter as an object of the list\'s filter parameters, e.g. {"q": "ORD"}.',
            field="filter",
        )
    data = QueryDict(mutable=True)
    for key, value in raw.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool):
                v = "true" if v else "false"
            elif v is None or not isinstance(v, str | int | float):
                raise DomainError(
                    "A filter value is a string, a number, a boolean or a list of them.",
                    field=f"filter.{key}",
                )
            data.appendlist(str(key), str(v))
    return data


def _filter_words(fs: FilterSet) -> tuple[str, ...]:
    """The filter's terms as the list's filter form labels and shows them ("Kind: Normal")."""
    words = []
    for name, field in fs.form.fields.items():
        value = fs.form.cleaned_data.get(name)
        if value in (None, "", [], ()):
            continue
        choices = dict(getattr(field, "choices", ()) or ())
        shown = [
            choices.get(v, choices.get(str(v), v))
            for v in (value if isinstance(value, list | tuple) else [value])
        ]
        said = ", ".join(("Yes" if v else "No") if isinstance(v, bool) else str(v) for v in shown)
        # As the filter form shows it; capitalized, since a filter's derived label is the model
        # field's lower-case verbose name once something (the API schema) has built it first.
        words.append(f"{capfirst(str(field.label or pretty_name(name)))}: {said}")
    return tuple(words)


def _parse_expected(raw: object) -> int | None:
    if raw is None or raw == "":
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise DomainError(
            "The number of objects you expect, a whole number.", field="expected_count"
        )
    return raw


def resolve_targets(
    registry: BulkActions,
    *,
    ids: object = None,
    filter: object = None,
    expected_count: object = None,
) -> Targets:
    """The objects a bulk action is for: the ``ids`` given, or every object of the list that
    ``filter`` matches now, through the list's own FilterSet (what the client counted is never
    trusted). A bad filter parameter is a 400 naming ``filter.<param>``; more than
    ``AQ_BULK_MAX`` matches a 400 naming ``filter``; ``expected_count`` other than the number
    found a 409 (:class:`CountChanged`). Writes nothing."""
    expected = _parse_expected(expected_count)
    if filter is None:
        wanted = _parse_ids(ids, noun=registry.noun)
        found = registry.objects().in_bulk(wanted)
        missing = [str(i) for i in wanted if i not in found]
        if missing:
            raise DomainError(f"No {registry.noun} with id {', '.join(missing)}.", field="ids")
        targets = Targets([found[i] for i in wanted])
    else:
        if ids not in (None, "", []):
            raise DomainError("Give ids or a filter, not both.", field="filter")
        targets = _matching(registry, _filter_data(filter))
    if expected is not None and expected != len(targets.objects):
        n = len(targets.objects)
        raise CountChanged(
            f"{n} {registry.noun if n == 1 else registry.plural} match now, not {expected}; "
            "nothing was done.",
            count=n,
            expected=expected,
        )
    return targets


def _matching(registry: BulkActions, data: QueryDict) -> Targets:
    data = data.copy()
    for key in NOT_FILTERS:
        data.pop(key, None)
    fs = registry.filterset(data=data, queryset=registry.listing())
    known = set(fs.filters)
    errors = [
        DomainError(
            f"Not a filter of the {registry.plural} list; one of: {', '.join(sorted(known))}.",
            field=f"filter.{key}",
        )
        for key in data
        if key not in known
    ]
    if not fs.is_valid():
        errors += [
            DomainError(" ".join(messages), field="filter" if key == "__all__" else f"filter.{key}")
            for key, messages in fs.errors.items()
        ]
    if errors:
        raise errors[0] if len(errors) == 1 else DomainErrors(errors)
    qs = fs.qs if fs.qs.ordered else fs.qs.order_by("pk")
    limit = max_matching()
    pks = list(qs.values_list("pk", flat=True)[: limit + 1])
    if len(pks) > limit:
        raise DomainError(
            f"The filter matches {qs.count()} {registry.plural}; a bulk action takes at most "
            f"{limit} (AQ_BULK_MAX): narrow the filter.",
            field="filter",
        )
    found = registry.objects().in_bulk(pks)
    # One dropped between the two reads is no longer a match.
    objects = [found[pk] for pk in pks if pk in found]
    return Targets(objects, data.urlencode(), _filter_words(fs))


def bulk_check(
    registry: BulkActions,
    *,
    user: User,
    action: object,
    ids: object = None,
    filter: object = None,
    expected_count: object = None,
) -> tuple[BulkAction, Targets]:
    """Refuse (403) a user who may use none of the verbs, or not this one; refuse (400, naming
    the field) an unknown verb, or targets :func:`resolve_targets` refuses. Returns the verb and
    the targets (in the order of ``ids``, or the list's order). Writes nothing."""
    allowed = registry.allowed(user)
    if not allowed:
        raise Forbidden("Your role does not allow this.")
    if not isinstance(action, str) or action not in registry.actions:
        known = ", ".join(registry.actions)
        said = "No action given" if action in (None, "") else f"Unknown action {str(action)[:40]!r}"
        raise DomainError(f"{said}; one of: {known}.", field="action")
    if action not in allowed:
        raise Forbidden("Your role does not allow this.")
    targets = resolve_targets(registry, ids=ids, filter=filter, expected_count=expected_count)
    return registry.actions[action], targets


def bulk_run(
    registry: BulkActions,
    *,
    user: User,
    action: object,
    ids: object = None,
    filter: object = None,
    expected_count: object = None,
) -> list[Outcome]:
    """Apply one verb to each target through its service, one object after the other.

    Each service call is its own transaction (callers must not wrap this in one): a refusal
    rolls back that object's call alone, and the next object is still tried. Errors other than
    a service's refusal are not refusals and propagate."""
    chosen, targets = bulk_check(
        registry, user=user, action=action, ids=ids, filter=filter, expected_count=expected_count
    )
    return [_run_one(registry, chosen, user, obj) for obj in targets.objects]


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
