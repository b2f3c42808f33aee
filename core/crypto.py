"""Encrypted values (gateway agent and link passwords, options flagged encrypted, database link
passwords): Fernet, keyed from MGW_ENCRYPTION_KEY or, when that is unset, derived from SECRET_KEY.
What is stored is the token; what any page, view or API shows is ``<<ENCRYPTED>>``. The key's
setting keeps its gateway name (and the derivation its "mgw:" salt) so that values stored before
the database links shared this module still decrypt."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

MASK = "<<ENCRYPTED>>"


def _fernet() -> Fernet:
    key = getattr(settings, "MGW_ENCRYPTION_KEY", "") or ""
    if not key:
        digest = hashlib.sha256(("mgw:" + settings.SECRET_KEY).encode()).digest()
        key = base64.urlsafe_b64encode(digest).decode()
    return Fernet(key.encode())


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode() if value else ""


def decrypt(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        # The key changed since the value was stored: say so instead of failing obscurely.
        raise ValueError(
            "An encrypted value cannot be read with the current MGW_ENCRYPTION_KEY/SECRET_KEY; "
            "set it again."
        ) from exc
