"""The depth of a JSON body is measured before it is parsed (parsing recurses), skipping what
is inside string literals, also unterminated ones: one pass over the text, so a body of quotes
and escaped quotes is refused or parsed at once (a backtracking pattern took minutes on
100 KB of '\\"')."""

from __future__ import annotations

import pytest

from core.storable import json_text_depth

ESCAPED_QUOTES = '"' + '\\"' * 200_000


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("[]", 1),
        ('[[["a]"]]]', 3),
        ('{"a": "[[[[", "b": [1, [2]]}', 3),
        ('[["\\"[[["]]', 2),
        ('"\\\\"', 0),
        ('"a"[[', 2),
        ('[1, "x', 1),
        ('[[[["\\', 4),
        (ESCAPED_QUOTES, 0),
        (ESCAPED_QUOTES + "\\", 0),
        ("[" * 70 + ESCAPED_QUOTES, 70),
    ],
)
def test_brackets_inside_strings_do_not_count(text, depth):
    assert json_text_depth(text) == depth


def test_a_body_of_escaped_quotes_is_answered_as_malformed_json(admin_api, queue):
    response = admin_api.generic(
        "POST", "/api/queues/ORDERS/enqueue/", ESCAPED_QUOTES, content_type="application/json"
    )

    assert response.status_code == 400, response.content
