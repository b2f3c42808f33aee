"""Reads of the sites app: the links with their joins, this site's global name, and the
``QUEUE@LINK`` addresses that remote propagations will name."""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet

from core.exceptions import DomainError
from sites.models import DatabaseLink


def local_global_name() -> str:
    """This site's GLOBAL_NAME (the setting; migrate copies it into ``aq_site``)."""
    return str(settings.AQ_GLOBAL_NAME)


def database_link_list() -> QuerySet[DatabaseLink]:
    return DatabaseLink.objects.select_related("owner").order_by("name")


def database_link_get(name: str, *, field: str = "link") -> DatabaseLink:
    """The link called ``name`` (any case); a DomainError naming ``field`` when there is none."""
    link = DatabaseLink.objects.filter(name=(name or "").strip().upper()).first()
    if link is None:
        raise DomainError(f"No database link is named {name!r}.", field=field)
    return link


def remote_destination(text: str, *, field: str = "destination") -> tuple[str, DatabaseLink]:
    """``QUEUE@LINK`` as (queue name, link); a DomainError naming ``field`` when it is not that
    shape or the link does not exist. Whether the queue exists is the remote site's to say."""
    queue, sep, link = (text or "").strip().partition("@")
    if not sep or not queue or not link:
        raise DomainError("Name a remote queue as QUEUE@LINK.", field=field)
    return queue.upper(), database_link_get(link, field=field)
