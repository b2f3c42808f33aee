from django.http import Http404

from core.validators import is_ascii_id, text_problem


class NameOrIdLookupMixin:
    """Objects are addressed by id or by (case-insensitive) name: /api/queues/ORDERS/."""

    lookup_value_regex = r"[^/]+"

    def get_object(self):  # type: ignore[no-untyped-def]
        key = self.kwargs[self.lookup_field]  # type: ignore[attr-defined]
        qs = self.get_queryset()  # type: ignore[attr-defined]
        # A name PostgreSQL cannot hold (a NUL) names nothing; it never reaches the query.
        obj = None
        if not text_problem(key):
            lookup = {"pk": int(key)} if is_ascii_id(key) else {"name__iexact": key}
            obj = qs.filter(**lookup).first()
        if obj is None:
            raise Http404(f"No such object: {key}.")
        self.check_object_permissions(self.request, obj)  # type: ignore[attr-defined]
        return obj
