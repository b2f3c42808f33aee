"""The sites app's Oracle-named status views: DBA_DB_LINKS, ALL_DB_LINKS and USER_DB_LINKS
(the last two per requesting user), GLOBAL_NAME."""

from typing import Any

from django.db.models import Q, QuerySet

from core.status import StatusView
from sites.models import AllDbLink, DbaDbLink, GlobalName, UserDbLink

_APP = "Sites"


def _own_id(user: Any) -> int | None:
    return user.pk if user is not None and user.is_authenticated else None


def _usable(rows: QuerySet, user: Any) -> QuerySet:
    """ALL_DB_LINKS: the user's own links and the PUBLIC ones (no owner)."""
    return rows.filter(Q(owner_id__isnull=True) | Q(owner_id=_own_id(user)))


def _owned(rows: QuerySet, user: Any) -> QuerySet:
    """USER_DB_LINKS: the user's own links only."""
    own = _own_id(user)
    return rows.filter(owner_id=own) if own is not None else rows.none()


STATUS_VIEWS = (
    StatusView(
        "dba_db_links",
        DbaDbLink,
        hidden=("link_id",),
        app=_APP,
        description="Database links to other sites: owner (PUBLIC when none), name, the user "
        "at the remote site and host:port/database (never the password).",
    ),
    StatusView(
        "all_db_links",
        AllDbLink,
        hidden=("link_id", "owner_id"),
        app=_APP,
        for_user=_usable,
        description="The database links you may use: your own and the PUBLIC ones.",
    ),
    StatusView(
        "user_db_links",
        UserDbLink,
        hidden=("link_id", "owner_id"),
        app=_APP,
        for_user=_owned,
        description="The database links you own (never the password).",
    ),
    StatusView(
        "global_name",
        GlobalName,
        hidden=("site_id",),
        app=_APP,
        description="This database's global name (AQ_GLOBAL_NAME), as other sites' links read it.",
    ),
)
