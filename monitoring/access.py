"""Who may read /metrics: a console user's API token (``Authorization: Token <key>``, what
Prometheus sends with ``authorization: {type: Token, credentials_file: ...}``) or a session, with
the VIEW capability; or, with no credentials at all, a client whose address is in
``AQ_METRICS_ALLOW`` (by default loopback only, for a Prometheus on the same machine)."""

from __future__ import annotations

import ipaddress
from functools import cache

from django.conf import settings
from django.http import HttpRequest
from rest_framework import exceptions

from core.api.authentication import TokenAuthentication
from core.choices import Capability
from core.roles import user_can

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@cache
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip())


def allowed_networks() -> tuple[Network, ...]:
    return _networks(tuple(settings.AQ_METRICS_ALLOW))


def address_allowed(address: str | None) -> bool:
    """REMOTE_ADDR only: a forwarded-for header is the client's word, not the connection's."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in allowed_networks())


def metrics_access_check(request: HttpRequest) -> None:
    """Return if the request may scrape; raise Refused(401 or 403) otherwise. Credentials, when
    sent, decide on their own: a bad token is refused even from an allowed address."""
    if request.headers.get("Authorization"):
        try:
            found = TokenAuthentication().authenticate(request)  # type: ignore[arg-type]
        except exceptions.AuthenticationFailed as exc:
            raise Refused(401, str(exc.detail)) from exc
        if found is None:  # another scheme than Token
            raise Refused(401, "Only 'Authorization: Token <key>' is accepted.")
        if not user_can(found[0], Capability.VIEW):
            raise Refused(403, "Your role does not allow this.")
        return
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        if not user_can(user, Capability.VIEW):
            raise Refused(403, "Your role does not allow this.")
        return
    if address_allowed(request.META.get("REMOTE_ADDR")):
        return
    raise Refused(401, "Authentication credentials were not provided.")
