"""``/rules/check/``: the condition editor's as-you-type check returns a fragment that says
"Valid · simple/complex" or shows the error with its line and column."""

from __future__ import annotations

import pytest

from tests.rules.lang_seed import G5, G12_SUBSET_INSERT

URL = "/rules/check/"


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_valid_condition_says_valid_and_simple(monitor_client, streams_context, method):
    response = getattr(monitor_client, method)(
        URL, {"condition": G5, "evaluation_context": streams_context.pk}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="condition-check"' in html
    assert 'data-valid="true"' in html
    assert "Valid · simple" in html
    assert "<html" not in html  # a fragment, not a page


def test_a_complex_condition_says_so_with_the_seeds_advice(monitor_client, streams_context):
    html = monitor_client.post(
        URL, {"condition": G12_SUBSET_INSERT, "evaluation_context": streams_context.pk}
    ).content.decode()

    assert "Valid · complex" in html
    assert "evaluated rule by rule" in html


@pytest.mark.parametrize(
    ("condition", "line", "column"),
    [
        (":dml.get_object_owner() = ", 1, 27),
        (":dml.get_object_owner() = 'HR'\n  AND :dml.get_object_name(", 2, 28),
        (":msg.region = 'EU'", 1, 1),
    ],
)
def test_an_invalid_condition_shows_line_and_column(
    monitor_client, streams_context, condition, line, column
):
    html = monitor_client.post(
        URL, {"condition": condition, "evaluation_context": streams_context.pk}
    ).content.decode()

    assert 'data-valid="false"' in html
    assert f'data-line="{line}"' in html
    assert f'data-column="{column}"' in html
    assert f"line {line}, column {column}" in html


def test_the_error_text_is_escaped(monitor_client):
    html = monitor_client.post(URL, {"condition": "<script>alert(1)</script>"}).content.decode()

    assert 'data-valid="false"' in html
    assert "<script>" not in html


def test_an_empty_condition_is_invalid(monitor_client):
    html = monitor_client.get(URL, {"condition": ""}).content.decode()

    assert 'data-valid="false"' in html


@pytest.mark.parametrize("context", ["abc", "999999", "-1", "1.5"])
def test_a_bad_context_value_never_breaks_the_check(monitor_client, context):
    response = monitor_client.get(URL, {"condition": G5, "evaluation_context": context})

    assert response.status_code in (200, 400)
    assert 'id="condition-check"' in response.content.decode()


def test_the_check_needs_a_login(client):
    response = client.get(URL, {"condition": G5})

    assert response.status_code in (302, 403)
