"""Writes of the core app: the change log."""

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.forms.models import model_to_dict

from core.choices import ChangeAction
from core.models import ChangeLogEntry


def object_snapshot(obj: models.Model) -> dict[str, Any]:
    """The object's own field values as JSON-safe data (foreign keys as ids)."""
    data = model_to_dict(obj)
    for field in obj._meta.concrete_fields:
        if not field.editable:
            data[field.name] = getattr(obj, field.attname)
    # model_to_dict gives many-to-many values as model instances, which JSON cannot hold.
    for field in obj._meta.many_to_many:
        if field.name in data:
            data[field.name] = sorted(related.pk for related in data[field.name])
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def change_log_record(
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    action: str,
    verb: str,
    obj: models.Model | None = None,
    object_type: str | None = None,
    object_id: Any = "",
    object_repr: str | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> ChangeLogEntry:
    """Write one change-log row; call it inside the service's transaction so both land or neither."""
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or obj.pk
        object_repr = object_repr or str(obj)
    real_user = user if user is not None and user.is_authenticated else None
    return ChangeLogEntry.objects.create(
        user=real_user,
        username=real_user.get_username() if real_user else "",
        action=ChangeAction(action),
        verb=verb,
        object_type=object_type or "",
        object_id=str(object_id or ""),
        object_repr=(object_repr or "")[:200],
        before=before,
        after=after,
    )


def change_log_deletion(
    *, user: AbstractBaseUser | AnonymousUser | None, verb: str, object_type: str, before: dict
) -> ChangeLogEntry:
    """Log the deletion of an object from its snapshot taken before ``delete()`` (after it the
    object has no pk left to name)."""
    return change_log_record(
        user=user,
        action=ChangeAction.DELETE,
        verb=verb,
        object_type=object_type,
        object_id=before["id"],
        object_repr=before["name"],
        before=before,
    )


def delete_or_refuse(obj: models.Model | models.QuerySet, *, what: str) -> None:
    """Delete ``obj`` (a row, or a queryset's rows), or raise Conflict naming what still points at it (a PROTECT foreign key
    from an app built later, such as a propagation on a queue), instead of a 500."""
    from django.db import transaction
    from django.db.models import ProtectedError

    from core.exceptions import Conflict

    try:
        with transaction.atomic():
            obj.delete()
    except ProtectedError as exc:
        users = sorted({f"{o._meta.verbose_name} {o}" for o in exc.protected_objects})
        shown = ", ".join(users[:5]) + (f" and {len(users) - 5} more" if len(users) > 5 else "")
        raise Conflict(f"{what} is still used by {shown}; remove those first.") from exc
