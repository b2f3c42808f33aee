"""Reads of the sites app: the links with their joins, this site's global name, and the
``QUEUE@LINK`` addresses that remote propagations will name."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db.models import CharField, F, Func, QuerySet
from django.db.models.expressions import RawSQL

from core.exceptions import DomainError
from sites.models import DatabaseLink


def local_global_name() -> str:
    """This site's GLOBAL_NAME (the setting; migrate copies it into ``aq_site``)."""
    return str(settings.AQ_GLOBAL_NAME)


# The other links that reach the same site (the same global name): Oracle allows several links
# to one database (different users at the remote, with different grants); the pages and the API
# show them so that nobody takes two links for two sites.
_SAME_SITE_SQL = """
(SELECT coalesce(array_agg(o.name ORDER BY o.name), '{}') FROM sites_databaselink o
 WHERE o.remote_global_name = sites_databaselink.remote_global_name
   AND o.id <> sites_databaselink.id)
"""


def connect_text() -> Func:
    """A link's connect text, as DBA_DB_LINKS.HOST shows it: ``host:port/database``, or for a
    Unix socket directory (a host starting with "/") ``localhost:port/database (socket /dir)``.
    The SQL function of sites migration 0004 is the one place that says it; the views use it."""
    return Func(
        F("host"), F("port"), F("database"), function="aq_db_link_connect", output_field=CharField()
    )


def database_link_list() -> QuerySet[DatabaseLink]:
    """The links with ``same_site_links`` (the names of the other links to the same site) and
    ``connect`` (:func:`connect_text`)."""
    return (
        DatabaseLink.objects.select_related("owner")
        .annotate(
            same_site_links=RawSQL(_SAME_SITE_SQL, (), output_field=ArrayField(CharField())),
            connect=connect_text(),
        )
        .order_by("name")
    )


def database_link_names_to_site(global_name: str) -> list[str]:
    """The names of every link here that reaches the site called ``global_name``."""
    return list(
        DatabaseLink.objects.filter(remote_global_name=global_name)
        .order_by("name")
        .values_list("name", flat=True)
    )


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
