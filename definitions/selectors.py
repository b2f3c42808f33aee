"""Reads of the definitions app: the topology as one document (``definitions_export``)."""

from __future__ import annotations

from typing import Any

from core import crypto
from definitions.kinds import KINDS, SECRET, Row

FORMAT = "aq-console-definitions"
VERSION = 1
ENCRYPTED = "encrypted"  # secrets sealed with this site's key (core.crypto.export_encrypt)
OMITTED = "omitted"  # secrets left out
SECRETS_MODES = (ENCRYPTED, OMITTED)


def _seal(value: str, secrets: str) -> Any:
    return {"encrypted": crypto.export_encrypt(value)} if value else ""


def _export_row(row: Row, secrets: str) -> Row:
    out = dict(row)
    if SECRET in out:
        if secrets == OMITTED:
            del out[SECRET]
        else:
            out[SECRET] = _seal(out[SECRET], secrets)
    if isinstance(out.get("options"), list):  # gateway agent options: some are secrets
        options = []
        for opt in out["options"]:
            opt = dict(opt)
            if opt.get("encrypted"):
                if secrets == OMITTED:
                    del opt["value"]
                else:
                    opt["value"] = _seal(opt["value"], secrets)
            options.append(opt)
        out["options"] = options
    return out


def definitions_rows() -> dict[str, list[tuple[Any, Row]]]:
    """Every kind's (object, row) pairs, secrets in plain text: for the import's comparison."""
    return {kind.name: list(kind.rows()) for kind in KINDS}


def definitions_export(*, secrets: str = ENCRYPTED) -> dict[str, Any]:
    """The topology as a definitions document (docs/DEFINITIONS.md). Deterministic: the same
    topology gives the same document, secrets included (sealed with AES-SIV)."""
    if secrets not in SECRETS_MODES:
        from core.exceptions import DomainError

        raise DomainError(f"secrets is {' or '.join(SECRETS_MODES)}.", field="secrets")
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "secrets": secrets}
    for kind in KINDS:
        doc[kind.name] = [_export_row(row, secrets) for _, row in kind.rows()]
    return doc
