"""Domain errors raised by services and the engines; views turn them into 400/403/404/409."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError


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


class DomainErrors(DomainError):
    """Several input errors found in one pass, so that a form or an API client sees all of them
    at once instead of one per submit. Its status is theirs when they agree, else 400."""

    def __init__(self, errors: list[DomainError]) -> None:
        super().__init__("; ".join(e.message for e in errors), field=errors[0].field)
        self.errors = errors
        codes = {e.status_code for e in errors}
        self.status_code = codes.pop() if len(codes) == 1 else 400
        self.code = errors[0].code if self.status_code == errors[0].status_code else "invalid"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for e in self.errors:
            out.setdefault(e.field or "detail", []).append(e.message)
        if "detail" in out:
            out["detail"] = " ".join(out["detail"])
            out["code"] = self.code
        return out


class ErrorCollector:
    """Run a service's independent checks and raise what they found together:

    ``errors = ErrorCollector()``, each check in ``with errors.check(): ...``, then
    ``errors.raise_any()`` before anything is written. A refusal (403) is not an input error and
    goes through at once; Django's ValidationError (a model's ``full_clean``) counts by field."""

    def __init__(self) -> None:
        self.errors: list[DomainError] = []

    @contextmanager
    def check(self) -> Iterator[None]:
        try:
            yield
        except DomainErrors as exc:
            self.errors.extend(exc.errors)
        except DomainError as exc:
            if exc.status_code == 403:
                raise
            self.errors.append(exc)
        except DjangoValidationError as exc:
            if not hasattr(exc, "error_dict"):
                self.errors.extend(DomainError(m) for m in exc.messages)
                return
            for field, messages in exc.message_dict.items():
                named = None if field == NON_FIELD_ERRORS else field
                self.errors.extend(DomainError(m, field=named) for m in messages)

    def raise_any(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise DomainErrors(self.errors)
