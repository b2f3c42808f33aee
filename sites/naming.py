"""The one rule for global names (Oracle's GLOBAL_NAME, DB_NAME.DB_DOMAIN): dot-separated parts,
the first starting with a letter; letters, digits, ``_ $ # -``; upper case; 255 characters."""

from __future__ import annotations

import re

GLOBAL_NAME_MAX = 255
_GLOBAL_NAME = re.compile(r"^[A-Z][A-Z0-9_$#-]*(\.[A-Z0-9_$#-]+)*$")


def global_name_problem(value: object) -> str | None:
    """Why ``value`` is not a global name, or None when it is one."""
    if not isinstance(value, str) or not value:
        return "A global name is required."
    if len(value) > GLOBAL_NAME_MAX:
        return f"A global name has at most {GLOBAL_NAME_MAX} characters."
    if not _GLOBAL_NAME.match(value):
        return (
            "A global name is upper-case parts separated by dots (DB_NAME.DB_DOMAIN), the first "
            "starting with a letter; letters, digits, _, $, # and - only."
        )
    return None
