"""Domain errors raised by services and the engines; views turn them into 400/403/404/409."""

from typing import Any


class DomainError(Exception):
    """A request that cannot be carried out; ``field`` names the input at fault."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        key = self.field or "detail"
        return {key: [self.message]} if self.field else {"detail": self.message, "code": self.code}


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class Forbidden(DomainError):
    status_code = 403
    code = "forbidden"


class NotFound(DomainError):
    status_code = 404
    code = "not_found"
