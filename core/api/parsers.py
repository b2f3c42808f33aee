"""The API's body parsers: DRF's, refusing at the door what no endpoint could store.

Every endpoint gets the same checks, whatever its serializer: JSON nested past
:data:`core.validators.MAX_JSON_DEPTH` (refused before parsing, so nothing recurses), text
PostgreSQL cannot store (NUL, lone surrogates) in any key or value, and non-finite numbers. Each
refusal is a 400 naming the place (``payload.t``, ``messages[0].headers``) or the limit.
"""

from __future__ import annotations

import codecs
from typing import Any

from django.http import QueryDict
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.settings import api_settings
from rest_framework.utils import json

from core.validators import MAX_JSON_DEPTH, json_problems, json_text_depth, text_problem


def _refuse(problems: dict[str, str]) -> None:
    if problems:
        raise ValidationError({path: [message] for path, message in problems.items()})


def _check_form(data: QueryDict) -> None:
    problems: dict[str, str] = {}
    for key, values in data.lists():
        if message := text_problem(key):
            problems["detail"] = f"A field name: {message[0].lower()}{message[1:]}"
            continue
        for value in values:
            if isinstance(value, str) and (message := text_problem(value)):
                problems[key] = message
    _refuse(problems)


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = parsers.get_encoding(parser_context or {})
        try:
            text = codecs.getreader(encoding)(stream).read()
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        depth = json_text_depth(text)
        if depth > MAX_JSON_DEPTH:
            raise ParseError(
                f"JSON nested {depth} levels deep; the limit is {MAX_JSON_DEPTH} levels "
                "(MAX_JSON_DEPTH)."
            )
        try:
            strict = json.strict_constant if api_settings.STRICT_JSON else None
            data = json.loads(text, parse_constant=strict)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        _refuse(json_problems(data))
        return data


class FormParser(parsers.FormParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        _check_form(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        result = super().parse(stream, media_type, parser_context)
        _check_form(result.data)
        return result
