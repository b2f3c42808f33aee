"""Encrypted values (gateway agent and link passwords, options flagged encrypted, database link
passwords): Fernet, keyed from MGW_ENCRYPTION_KEY or, when that is unset, derived from SECRET_KEY.
What is stored is the token; what any page, view or API shows is ``<<ENCRYPTED>>``. The key's
setting keeps its gateway name (and the derivation its "mgw:" salt) so that values stored before
the database links shared this module still decrypt."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

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


# --- secrets in exported definitions (definitions app) -------------------------------------------
# Deterministic authenticated encryption (AES-SIV, RFC 5297): the same secret under the same key
# gives the same text, so exporting twice, or after a round trip, gives the same document. It
# tells a reader of the document which secrets are equal, never what they are.


def _siv() -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESSIV

    key = getattr(settings, "MGW_ENCRYPTION_KEY", "") or ""
    seed = ("definitions:" + (key or settings.SECRET_KEY)).encode()
    return AESSIV(hashlib.sha512(seed).digest())  # 64 bytes: AES-256-SIV


def export_encrypt(value: str) -> str:
    """``value`` sealed for an exported document (empty stays empty)."""
    if not value:
        return ""
    return base64.urlsafe_b64encode(_siv().encrypt(value.encode(), None)).decode()


def export_decrypt(token: str) -> str:
    """The secret of an exported document; ValueError when this site's key cannot open it."""
    from cryptography.exceptions import InvalidTag

    if not token:
        return ""
    try:
        return _siv().decrypt(base64.urlsafe_b64decode(token.encode()), None).decode()
    except (InvalidTag, ValueError, TypeError) as exc:
        raise ValueError(
            "This encrypted value was exported with another MGW_ENCRYPTION_KEY/SECRET_KEY (or "
            "is damaged); export with the same key, or give the secret again."
        ) from exc
