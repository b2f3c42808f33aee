"""GET /api/definitions/ (export) and POST /api/definitions/ (import), as RabbitMQ's
management API has them; thin views over definitions.selectors and definitions.services."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.choices import Capability
from core.exceptions import DomainError, Forbidden
from core.roles import user_can
from definitions.selectors import ENCRYPTED, OMITTED, definitions_export
from definitions.services import definitions_import

TRUE, FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def flag(request: Request, name: str) -> bool:
    """A yes/no query parameter; anything else is a 400 naming it."""
    value = str(request.query_params.get(name, "")).strip().lower()
    if value not in TRUE + FALSE:
        raise DomainError(f"{name} is true or false, not {value!r}.", field=name)
    return value in TRUE


def secrets_mode(value: str) -> str:
    """``secrets=omit`` (or ``omitted``) leaves them out; the default seals them."""
    value = (value or ENCRYPTED).strip().lower()
    modes = {"encrypted": ENCRYPTED, "encrypt": ENCRYPTED, "omit": OMITTED, "omitted": OMITTED}
    if value not in modes:
        raise DomainError("secrets is encrypted or omit.", field="secrets")
    return modes[value]


class DefinitionsView(APIView):
    """The whole topology as one definitions document (docs/DEFINITIONS.md)."""

    capability = Capability.CONFIGURE

    @extend_schema(
        parameters=[
            OpenApiParameter("secrets", str, enum=["encrypted", "omit"], required=False),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        """Export. Sealed secrets are for this console's key only; administrators only."""
        if not user_can(request.user, Capability.CONFIGURE):
            raise Forbidden("Your role does not allow this.")
        doc = definitions_export(secrets=secrets_mode(request.query_params.get("secrets", "")))
        response = Response(doc)
        if flag(request, "download"):
            response["Content-Disposition"] = 'attachment; filename="definitions.json"'
        return response

    @extend_schema(
        parameters=[
            OpenApiParameter("dry_run", bool, required=False),
            OpenApiParameter("prune", bool, required=False),
        ],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request: Request) -> Response:
        """Import: the body is the document. Answers the plan (create, change, delete with the
        fields that change) and whether it was applied; a refusal is a 400 naming the
        document's path, and nothing is written."""
        plan = definitions_import(
            user=request.user,
            document=request.data,
            prune=flag(request, "prune"),
            dry_run=flag(request, "dry_run"),
        )
        return Response(plan.as_dict())
