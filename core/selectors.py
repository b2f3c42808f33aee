from django.db.models import QuerySet

from core.models import ChangeLogEntry


def change_log_list() -> QuerySet[ChangeLogEntry]:
    return ChangeLogEntry.objects.select_related("user")
