from django.http import Http404

from core.lookups import name_or_id_q


class NameOrIdLookupMixin:
    """Objects are addressed by id or by (case-insensitive) name: /api/queues/ORDERS/."""

    lookup_value_regex = r"[^/]+"

    def get_object(self):  # type: ignore[no-untyped-def]
        key = self.kwargs[self.lookup_field]  # type: ignore[attr-defined]
        qs = self.get_queryset()  # type: ignore[attr-defined]
        where = name_or_id_q(key)
        obj = None if where is None else qs.filter(where).first()
        if obj is None:
            raise Http404(f"No such object: {key}.")
        self.check_object_permissions(self.request, obj)  # type: ignore[attr-defined]
        return obj
