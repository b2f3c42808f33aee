from django.http import HttpRequest

from core.choices import Capability
from core.roles import user_capabilities


def roles(request: HttpRequest) -> dict:
    caps = user_capabilities(getattr(request, "user", None))
    return {
        "can_operate": Capability.OPERATE in caps,
        "can_configure": Capability.CONFIGURE in caps,
    }
