"""Directed networks: where a message comes from and where it has been (docs/SITES.md, "Origin,
route and tag").

A message enqueued at a site has no origin and no route (NULL: this site). When a remote
propagation delivers it to another site (:func:`queues.engine.receive`) the copy there keeps the
origin (or takes the sending site as its origin, if it started there) and its route gains the
sending site. A local propagation copies both unchanged: the message stays on the site. The tag
(Oracle's Streams tag) travels unchanged everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from queues.engine.types import DequeuedMessage, NewMessage


def arrived(messages: Sequence[NewMessage], source_site: str) -> list[NewMessage]:
    """The copies of ``messages`` as they arrive from ``source_site``: origin kept (or
    ``source_site`` for a message that started there), ``source_site`` appended to the route."""
    return [
        replace(
            m,
            origin_site=m.origin_site or source_site,
            route=[*(m.route or ()), source_site],
        )
        for m in messages
    ]


def visited(message: DequeuedMessage, site: str, *, here: str) -> bool:
    """Whether ``message`` (held at ``here``) has already been at ``site``: its origin (``here``
    when it has none), a site on its route, or ``here`` itself. A propagation never sends a
    message to such a site (loop prevention: A → B → A moves nothing twice)."""
    return (
        site == here
        or site == message.origin_site
        or (message.route is not None and site in message.route)
    )
