"""The session engine: Django's database sessions, except that a session cookie PostgreSQL cannot
hold (a NUL) is no session, so a forged cookie gets the login page rather than a server error."""

from __future__ import annotations

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore

from core.validators import text_problem


class SessionStore(DatabaseSessionStore):
    def _validate_session_key(self, key: str | None) -> bool:
        return bool(super()._validate_session_key(key)) and not text_problem(key or "")
