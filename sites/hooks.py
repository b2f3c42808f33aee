"""Who uses a database link: apps built on the links register a function here (the remote
propagations will, in their AppConfig.ready), and dropping a link, or pointing it at another
site, is refused while any of them names a user."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sites.models import DatabaseLink

# A function from a link to the names of what uses it ("propagation P1"), empty when nothing.
LinkUsers = Callable[["DatabaseLink"], list[str]]

_LINK_USERS: dict[str, LinkUsers] = {}


def register_link_users(key: str, users: LinkUsers) -> None:
    """Add (or replace, by ``key``) a source of link users."""
    _LINK_USERS[key] = users


def unregister_link_users(key: str) -> None:
    _LINK_USERS.pop(key, None)


def link_users(link: DatabaseLink) -> list[str]:
    return sorted({name for users in _LINK_USERS.values() for name in users(link)})
