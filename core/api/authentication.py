"""Token authentication that a hostile header cannot turn into a server error."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions

from core.validators import text_problem


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's, except that a key PostgreSQL cannot hold (a NUL in the header) is an invalid token
    (401) instead of a query that fails."""

    def authenticate_credentials(self, key: str) -> Any:
        if text_problem(key):
            raise exceptions.AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(key)
