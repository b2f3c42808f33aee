"""Who may do what: roles are Django groups, capabilities are what a role allows."""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from core.choices import Capability, Role

ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    Role.ADMINISTRATOR: frozenset({Capability.VIEW, Capability.OPERATE, Capability.CONFIGURE}),
    Role.OPERATOR: frozenset({Capability.VIEW, Capability.OPERATE}),
    Role.MONITOR: frozenset({Capability.VIEW}),
}


def user_capabilities(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    if not user or not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return ROLE_CAPABILITIES[Role.ADMINISTRATOR]
    cached = getattr(user, "_aq_capabilities", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        cached = frozenset().union(*(ROLE_CAPABILITIES.get(n, frozenset()) for n in names))
        user._aq_capabilities = cached  # type: ignore[union-attr]
    return cached


def user_can(user: AbstractBaseUser | AnonymousUser, capability: str) -> bool:
    return capability in user_capabilities(user)
