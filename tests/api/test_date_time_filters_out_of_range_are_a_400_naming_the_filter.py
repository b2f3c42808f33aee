"""A date-time filter PostgreSQL cannot compare with (an offset past ±15:59, a date that
overflows once moved to UTC) is a 400 naming the filter on the API, and is shown as the filter's
error on the page; never a server error."""

from __future__ import annotations

from urllib.parse import quote

import pytest

BAD = [
    "2024-01-01T00:00:00-17:00",
    "2024-01-01T00:00:00+23:59",
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:00:00-05:00",
]


@pytest.mark.parametrize("since", BAD)
def test_the_change_log_api_refuses_it_naming_since(admin_api, since):
    response = admin_api.get(f"/api/changelog/?since={quote(since)}")

    assert response.status_code == 400, response.content
    assert "since" in response.json(), response.json()


def test_an_offset_postgresql_takes_still_filters(admin_api, queue):
    response = admin_api.get(f"/api/changelog/?since={quote('2000-01-01T00:00:00-09:30')}")

    assert response.status_code == 200, response.content
    assert response.json()["count"] >= 1


@pytest.mark.parametrize("since", BAD)
def test_the_change_log_page_shows_the_error_on_the_filter(admin_client, since):
    response = admin_client.get(f"/changelog/?since={quote(since)}")

    assert response.status_code == 200
    assert 'data-field="since"' in response.content.decode()
