"""An id is 1 to 18 ASCII digits: a longer digit string (past bigint at 19, past what ``int()``
converts at 4,301) is a name, found or not, so a path answers 404, a body a 400 naming the
field and the condition check a fragment; never a server error."""

from __future__ import annotations

import pytest

from core.lookups import name_or_id_q
from core.storable import is_ascii_id
from jobs.models import Propagation

LONG = ["9" * 19, "1" * 25, "7" * 4301]


@pytest.mark.parametrize("key", LONG)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/queues/{key}/"),
        ("post", "/api/queues/{key}/enqueue/"),
        ("get", "/api/propagations/{key}/"),
        ("get", "/api/gateway/agents/{key}/"),
        ("get", "/api/gateway/foreign-queues/{key}/"),
    ],
)
def test_in_a_path_it_is_a_404(admin_api, queue, key, method, path):
    response = getattr(admin_api, method)(path.format(key=key), {"payload": 1}, format="json")

    assert response.status_code == 404, response.content[:300]


@pytest.mark.parametrize("key", LONG)
def test_in_a_body_it_is_a_400_naming_the_field(admin_api, queue, key):
    body = {"name": "P1", "source_queue": key, "destination_queue": queue.name}

    response = admin_api.post("/api/propagations/", body, format="json")

    assert response.status_code == 400, response.content[:300]
    assert "source_queue" in response.json()
    assert not Propagation.objects.exists()


@pytest.mark.parametrize("key", LONG)
def test_the_condition_check_takes_it_as_no_context(monitor_client, key):
    response = monitor_client.post(
        "/rules/check/", {"condition": "1 = 1", "evaluation_context": key}
    )

    assert response.status_code == 200
    assert 'id="condition-check"' in response.content.decode()


def test_eighteen_digits_are_an_id_and_nineteen_are_not():
    assert is_ascii_id("9" * 18) and is_ascii_id(10**18 - 1)
    assert not is_ascii_id("9" * 19) and not is_ascii_id(10**18) and not is_ascii_id(-1)
    assert name_or_id_q("9" * 18).children == [("pk", 10**18 - 1)]
    assert name_or_id_q("9" * 19).children == [("name__iexact", "9" * 19)]
    assert name_or_id_q("A\x00B") is None and name_or_id_q("\ud800") is None
    assert name_or_id_q("") is None and name_or_id_q(True) is None
