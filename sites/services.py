"""Writes of the sites app: this site's ``aq_site`` row and the database links
(CREATE / ALTER / DROP DATABASE LINK), plus Test connection.

A link is written only after its remote answered: reachable, the credentials accepted, a site
(this project's schema migrated there), and its global name read. Connecting happens outside
the transaction, so a slow remote holds no lock here; the write itself is one transaction with
its change-log entry. Any refusal is a DomainError naming the field at fault, and nothing is
written.
"""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction

from core import crypto
from core.choices import Capability, ChangeAction
from core.exceptions import Conflict, DomainError, Forbidden
from core.roles import user_can
from core.services import change_log_deletion, change_log_record, object_snapshot
from core.storable import text_problem
from core.validators import name_validator
from gateway.models import Link as GatewayLink
from sites import hooks, remote
from sites.choices import SslMode
from sites.models import DatabaseLink, LocalSite
from sites.naming import global_name_problem
from sites.selectors import local_global_name

User = AbstractBaseUser | AnonymousUser | None

# ALTER's "leave unchanged".
NO_CHANGE: Any = object()

# The fields that say where the link connects: changing any of them asks the remote again.
CONNECTION_FIELDS = ("host", "port", "database", "username", "password", "sslmode", "sslrootcert")


def _require(user: User, capability: str) -> None:
    if user is not None and not user_can(user, capability):
        raise Forbidden("Your role does not allow this.")


def _snapshot(link: DatabaseLink) -> dict[str, Any]:
    data = object_snapshot(link)
    if data.get("password_encrypted"):
        data["password_encrypted"] = crypto.MASK
    return data


# --- this site -----------------------------------------------------------------------------------


def local_site_sync(using: str = "default", **_: object) -> None:
    """``post_migrate`` receiver: write AQ_GLOBAL_NAME into the one ``aq_site`` row, so other
    sites' links read the name this site's pages show (a flush empties the table; the flush's
    own post_migrate writes it again)."""
    name = local_global_name()
    if problem := global_name_problem(name):
        raise DomainError(f"AQ_GLOBAL_NAME {name!r}: {problem}", field="AQ_GLOBAL_NAME")
    LocalSite.objects.using(using).update_or_create(id=1, defaults={"global_name": name})


# --- input checks --------------------------------------------------------------------------------


def _text(value: Any, *, field: str, max_length: int, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise DomainError("Must be text.", field=field)
    value = value.strip()
    if required and not value:
        raise DomainError("This field is required.", field=field)
    if problem := text_problem(value):
        raise DomainError(problem, field=field)
    if len(value) > max_length:
        raise DomainError(f"At most {max_length} characters.", field=field)
    return value


def _name(value: Any) -> str:
    name = _text(value, field="name", max_length=128).upper()
    try:
        name_validator(name)
    except Exception as exc:  # django's ValidationError: its one message
        raise DomainError(name_validator.message, field="name") from exc
    return name


def _host(value: Any) -> str:
    host = _text(value, field="host", max_length=255)
    if any(c.isspace() for c in host) or "=" in host or "," in host:
        # libpq would read "a,b" as two hosts and "x=y" as a connection keyword.
        raise DomainError("A host name or address, without spaces, commas or '='.", field="host")
    return host


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise DomainError("A port is a whole number from 1 to 65535.", field="port")
    return value


def _sslmode(value: Any) -> str:
    mode = (value if isinstance(value, str) else "").strip().lower() or SslMode.PREFER
    if mode not in SslMode.values:
        raise DomainError(f"Use one of {', '.join(SslMode.values)}.", field="sslmode")
    return mode


def _sslrootcert(value: Any) -> str:
    path = _text(value, field="sslrootcert", max_length=1024, required=False)
    # libpq reads the file only when TLS is used: a missing one would go unseen until then.
    if path and path != "system" and not os.path.isfile(path):
        raise DomainError(
            f"No file {path} on this machine (the console opens the connection).",
            field="sslrootcert",
        )
    return path


def _endpoint(fields: dict[str, Any]) -> remote.Endpoint:
    return remote.Endpoint(
        host=_host(fields["host"]),
        port=_port(fields["port"]),
        database=_text(fields["database"], field="database", max_length=63),
        username=_text(fields["username"], field="username", max_length=63),
        password=_text(fields["password"], field="password", max_length=1024, required=False),
        sslmode=_sslmode(fields["sslmode"]),
        sslrootcert=_sslrootcert(fields["sslrootcert"]),
    )


def _connection(link: DatabaseLink) -> dict[str, Any]:
    """The link's stored connection fields (all but the password) as ``_endpoint`` takes them."""
    return {f: getattr(link, f) for f in CONNECTION_FIELDS if f != "password"}


def _probe(endpoint: remote.Endpoint) -> remote.SiteInfo:
    try:
        return remote.probe(endpoint)
    except remote.RemoteError as exc:
        raise DomainError(exc.message, field=exc.field) from exc


def _check_name_free(name: str) -> None:
    if DatabaseLink.objects.filter(name=name).exists():
        raise Conflict(f"Database link {name} already exists.", field="name")
    if GatewayLink.objects.filter(name=name).exists():
        raise Conflict(
            f"{name} is already a messaging gateway link: QUEUE@{name} must name one link.",
            field="name",
        )


# --- database links ------------------------------------------------------------------------------


def database_link_create(
    *,
    user: User,
    name: str,
    host: str,
    port: int = 5432,
    database: str,
    username: str,
    password: str = "",
    sslmode: str = SslMode.PREFER,
    sslrootcert: str = "",
    comment: str = "",
) -> DatabaseLink:
    """CREATE DATABASE LINK: checks the input, asks the remote (reachable, credentials, a site)
    for its global name, then writes the link (password encrypted) and its change-log entry."""
    _require(user, Capability.CONFIGURE)
    name = _name(name)
    endpoint = _endpoint(
        {
            "host": host,
            "port": port,
            "database": database,
            "username": username,
            "password": password,
            "sslmode": sslmode,
            "sslrootcert": sslrootcert,
        }
    )
    comment = _text(comment, field="comment", max_length=4000, required=False)
    _check_name_free(name)
    site = _probe(endpoint)
    owner = user if user is not None and user.is_authenticated else None
    try:
        with transaction.atomic():
            _check_name_free(name)  # again: another request may have taken it meanwhile
            link = DatabaseLink.objects.create(
                name=name,
                owner=owner,
                host=endpoint.host,
                port=endpoint.port,
                database=endpoint.database,
                username=endpoint.username,
                password_encrypted=crypto.encrypt(endpoint.password),
                sslmode=endpoint.sslmode,
                sslrootcert=endpoint.sslrootcert,
                remote_global_name=site.global_name,
                comment=comment,
            )
            change_log_record(
                user=user,
                action=ChangeAction.CREATE,
                verb="database_link_create",
                obj=link,
                after=_snapshot(link),
            )
    except IntegrityError as exc:  # the unique name, taken between the check and the insert
        raise Conflict(f"Database link {name} already exists.", field="name") from exc
    return link


def database_link_alter(
    *,
    user: User,
    link: DatabaseLink,
    host: Any = NO_CHANGE,
    port: Any = NO_CHANGE,
    database: Any = NO_CHANGE,
    username: Any = NO_CHANGE,
    password: Any = NO_CHANGE,
    sslmode: Any = NO_CHANGE,
    sslrootcert: Any = NO_CHANGE,
    comment: Any = NO_CHANGE,
) -> DatabaseLink:
    """ALTER DATABASE LINK: what is given changes. A change to where or how it connects asks the
    remote again and keeps its new global name; pointing a link that propagations use at a
    different site is refused (they were set up for the site it reached). The name is fixed."""
    _require(user, Capability.CONFIGURE)
    given = {
        "host": host,
        "port": port,
        "database": database,
        "username": username,
        "password": password,
        "sslmode": sslmode,
        "sslrootcert": sslrootcert,
    }
    changed = {k: v for k, v in given.items() if v is not NO_CHANGE}
    new_comment = (
        link.comment
        if comment is NO_CHANGE
        else _text(comment, field="comment", max_length=4000, required=False)
    )
    endpoint = site = None
    if changed:
        if "password" not in changed:
            try:
                changed["password"] = crypto.decrypt(link.password_encrypted)
            except ValueError as exc:
                raise DomainError(str(exc), field="password") from exc
        endpoint = _endpoint({**_connection(link), **changed})
        site = _probe(endpoint)
    with transaction.atomic():
        ln = DatabaseLink.objects.select_for_update().get(pk=link.pk)
        before = _snapshot(ln)
        if site is not None and site.global_name != ln.remote_global_name:
            users = hooks.link_users(ln)
            if users:
                raise Conflict(
                    f"The link now reaches site {site.global_name}, not {ln.remote_global_name}, "
                    f"and {', '.join(users)} use it; drop those first or create a new link.",
                    field="host",
                )
        if endpoint is not None and site is not None:
            ln.host, ln.port, ln.database = endpoint.host, endpoint.port, endpoint.database
            ln.username, ln.sslmode = endpoint.username, endpoint.sslmode
            ln.sslrootcert = endpoint.sslrootcert
            if password is not NO_CHANGE:
                ln.password_encrypted = crypto.encrypt(endpoint.password)
            ln.remote_global_name = site.global_name
        ln.comment = new_comment
        ln.save()
        change_log_record(
            user=user,
            action=ChangeAction.UPDATE,
            verb="database_link_alter",
            obj=ln,
            before=before,
            after=_snapshot(ln),
        )
    return ln


@transaction.atomic
def database_link_drop(*, user: User, link: DatabaseLink) -> None:
    """DROP DATABASE LINK: refused (409) while anything registered in sites.hooks uses it."""
    _require(user, Capability.CONFIGURE)
    ln = DatabaseLink.objects.select_for_update().get(pk=link.pk)
    users = hooks.link_users(ln)
    if users:
        shown = ", ".join(users[:5]) + (f" and {len(users) - 5} more" if len(users) > 5 else "")
        raise Conflict(f"Database link {ln.name} is still used by {shown}; drop those first.")
    before = _snapshot(ln)
    ln.delete()
    change_log_deletion(
        user=user, verb="database_link_drop", object_type="sites.databaselink", before=before
    )


def database_link_test(*, user: User, link: DatabaseLink) -> tuple[bool, str]:
    """Test connection: (True, "<global name> (PostgreSQL <version>)") or (False, why). A site
    that now answers with another global name than the link recorded is a failure too."""
    _require(user, Capability.OPERATE)
    try:
        site = remote.probe(remote.link_endpoint(link))
    except remote.RemoteError as exc:
        return False, f"{exc.field}: {exc.message}"
    except ValueError as exc:  # the encryption key changed since the password was stored
        return False, f"password: {exc}"
    if site.global_name != link.remote_global_name:
        return False, (
            f"Connected, but the site answers as {site.global_name}, not "
            f"{link.remote_global_name} as when the link was made; alter the link to accept it."
        )
    return True, f"{site.global_name} (PostgreSQL {site.server_version})"
