"""Addressing an object by id or by name: the one rule the API, the pages and the selectors share."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Q

from core.storable import is_ascii_id, text_problem


def name_or_id_q(key: object, name: str | Callable[[str], Q] = "name__iexact") -> Q | None:
    """The filter for ``key`` as an id (an int, or 1 to 18 ASCII digits) or else as a name
    (``name`` is the lookup, or a function building the filter from the text), or None when
    ``key`` can name nothing: not text, empty, or text PostgreSQL cannot store (a NUL, a lone
    surrogate). Callers answer None as "not found" without querying."""
    if is_ascii_id(key):
        return Q(pk=int(key))  # type: ignore[arg-type]
    if isinstance(key, bool) or not isinstance(key, str) or not key or text_problem(key):
        return None
    return name(key) if callable(name) else Q(**{name: key})
