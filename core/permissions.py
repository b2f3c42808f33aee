"""One permission class for every API view: safe methods need VIEW, the rest what the view says."""

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission

if TYPE_CHECKING:  # importing these at load time is circular: DRF imports this module
    from rest_framework.request import Request
    from rest_framework.views import APIView

from core.choices import Capability
from core.roles import user_can


class RolePermission(BasePermission):
    """Views name the capability their writes need (``capability``, default CONFIGURE); actions
    may override it per action name through ``action_capabilities``."""

    message = "Your role does not allow this."

    def has_permission(self, request: "Request", view: "APIView") -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        if request.method in SAFE_METHODS:
            needed = Capability.VIEW
        else:
            action = getattr(view, "action", None)
            needed = getattr(view, "action_capabilities", {}).get(
                action, getattr(view, "capability", Capability.CONFIGURE)
            )
        return user_can(request.user, needed)
