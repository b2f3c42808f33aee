"""A name-or-id is an id only when it is ASCII digits: ``¹`` (which ``str.isdigit`` calls a
digit) or an Arabic-Indic seven is a name, found or not; a NUL in a name-or-id names nothing. In a
path that is a 404, in a body a 400 naming the field; never a server error."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from jobs.models import Propagation


@pytest.mark.parametrize("key", ["\u00b9", "\u0667", "\uff11", "A\x00B", "\x00", "1\x00"])
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/queues/{key}/"),
        ("post", "/api/queues/{key}/enqueue/"),
        ("get", "/api/queue-tables/{key}/"),
        ("get", "/api/rules/{key}/"),
        ("get", "/api/rule-sets/{key}/"),
        ("get", "/api/propagations/{key}/"),
        ("get", "/api/spark-jobs/{key}/"),
        ("get", "/api/agents/{key}/"),
        ("get", "/api/gateway/agents/{key}/"),
        ("get", "/api/gateway/links/{key}/"),
        ("get", "/api/gateway/jobs/{key}/"),
        ("get", "/api/gateway/foreign-queues/{key}/"),
        ("delete", "/api/gateway/foreign-queues/{key}/"),
    ],
)
def test_in_a_path_it_is_a_404(admin_api, queue, key, method, path):
    response = getattr(admin_api, method)(
        path.format(key=quote(key)), {"payload": 1}, format="json"
    )

    assert response.status_code == 404, response.content


def test_an_ascii_id_still_finds_the_object(admin_api, queue):
    assert admin_api.get(f"/api/queues/{queue.pk}/").json()["name"] == "ORDERS"


@pytest.mark.parametrize("key", ["\u00b97", "\u0667", "A\x00B"])
@pytest.mark.parametrize("field", ["source_queue", "destination_queue"])
def test_in_a_body_it_is_a_400_naming_the_field(
    admin_api, mc_table, make_queue, snapshot, key, field
):
    make_queue("SRC", mc_table)
    make_queue("DST", mc_table)
    before = snapshot()
    body = {"name": "P1", "source_queue": "SRC", "destination_queue": "DST", field: key}

    response = admin_api.post("/api/propagations/", body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Propagation.objects.exists()
    before.assert_unchanged()
