"""Primary and secondary instances through the API and the pages: bad input is a 400 naming the
field and writes nothing; an instance no worker reported is accepted and shown DOWN with a
warning; a queue's GET says which instance owns it, under which service."""

from __future__ import annotations

import pytest

from instances.models import Instance
from instances.services import instance_heartbeat
from queues.models import DbaService, QueueTable

pytestmark = pytest.mark.django_db

URL = "/api/queue-tables/"


def up(name: str) -> int:
    return instance_heartbeat(name=name, host=f"host-{name}", worker=f"w@{name}")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"primary_instance": "n1", "secondary_instance": "N1"}, "secondary_instance"),
        ({"primary_instance": True}, "primary_instance"),
        ({"primary_instance": ["n1"]}, "primary_instance"),
        ({"secondary_instance": {"name": "n1"}}, "secondary_instance"),
        ({"primary_instance": 1.5}, "primary_instance"),
        ({"primary_instance": "a b"}, "primary_instance"),
        ({"primary_instance": "x" * 65}, "primary_instance"),
        ({"secondary_instance": 987654}, "secondary_instance"),
        ({"secondary_instance": 2**70}, "secondary_instance"),
        ({"primary_instance": -1}, "primary_instance"),
        ({"primary_instance": "n\x00"}, "primary_instance"),
    ],
)
def test_bad_instances_are_a_400_naming_the_field_and_nothing_is_created(admin_api, body, field):
    up("n1")
    r = admin_api.post(URL, {"name": "QT_BAD", **body})
    assert r.status_code == 400, r.content
    assert field in r.json(), r.json()
    assert not QueueTable.objects.filter(name="QT_BAD").exists()
    assert list(Instance.objects.values_list("name", flat=True)) == ["n1"]


def test_an_instance_no_worker_reported_is_accepted_down_with_a_warning(admin_api, admin_client):
    n1 = up("n1")
    r = admin_api.post(URL, {"name": "QT_NEW", "primary_instance": "n9", "secondary_instance": n1})
    assert r.status_code == 201, r.content
    body = r.json()
    assert (body["primary_instance"], body["secondary_instance"]) == ("n9", "n1")
    assert body["owner_instance"] == {
        "inst_id": n1,
        "name": "n1",
        "host": "host-n1",
        "status": "UP",
    }
    [warning] = body["warnings"]
    assert "n9" in warning and "AQ_INSTANCE_NAME=n9" in warning
    assert admin_api.get("/api/instances/n9/").json()["status"] == "DOWN"

    page = admin_client.get(f"/queues/tables/{body['id']}/")
    assert page.status_code == 200
    assert b'data-warning="instance"' in page.content and b"n9" in page.content


def test_altering_through_the_api_moves_the_owner_and_refuses_the_primary_as_secondary(admin_api):
    n1, n2 = up("n1"), up("n2")
    qt = admin_api.post(URL, {"name": "QT_ALT", "primary_instance": "n1"}).json()
    assert qt["owner_instance"]["inst_id"] == n1
    r = admin_api.patch(f"{URL}QT_ALT/", {"primary_instance": n2, "secondary_instance": "n1"})
    assert r.status_code == 200, r.content
    assert (r.json()["owner_instance"]["name"], r.json()["warnings"]) == ("n2", [])
    r = admin_api.patch(f"{URL}QT_ALT/", {"secondary_instance": "n2"})
    assert r.status_code == 400 and "secondary_instance" in r.json()
    moves = admin_api.get("/api/queue-table-owner-moves/?q=QT_ALT").json()["results"]
    assert [(m["from_instance"], m["to_instance"]) for m in moves] == [("n1", "n2"), (None, "n1")]
    dba = admin_api.get("/api/status/dba_queue_tables/").json()["results"]
    [row] = [d for d in dba if d["queue_table"] == "QT_ALT"]
    assert (row["primary_instance"], row["secondary_instance"], row["owner_instance"]) == (
        n2,
        n1,
        n2,
    )


def test_a_queue_says_which_instance_owns_it_and_its_service(admin_api, admin_client):
    n1 = up("n1")
    admin_api.post(URL, {"name": "QT_SVC", "primary_instance": "n1"})
    assert (
        admin_api.post("/api/queues/", {"name": "ORDERS", "queue_table": "QT_SVC"}).status_code
        == 201
    )
    q = admin_api.get("/api/queues/ORDERS/").json()
    assert q["network_name"].startswith("SYS$ALICE.ORDERS.")
    assert q["owner_instance"] == {"inst_id": n1, "name": "n1", "host": "host-n1", "status": "UP"}
    svc = DbaService.objects.get(queue_name="ORDERS")
    assert (svc.name, svc.network_name, svc.inst_id, svc.instance_name, svc.host_name) == (
        q["network_name"],
        q["network_name"],
        n1,
        "n1",
        "host-n1",
    )
    dba_queues = admin_api.get("/api/status/dba_queues/").json()["results"]
    assert {d["name"]: d["network_name"] for d in dba_queues}["ORDERS"] == q["network_name"]
    # S003's server mode: the queues whose owner (active instance) is mine.
    mine = admin_api.get("/api/queues/?owner_instance=N1").json()["results"]
    assert sorted(m["name"] for m in mine) == ["AQ$_QT_SVC_E", "ORDERS"]
    assert admin_api.get("/api/queues/?owner_instance=n2").json()["results"] == []
    page = admin_client.get(f"/queues/{q['id']}/")
    assert b'id="queue-service"' in page.content and q["network_name"].encode() in page.content


def test_the_page_form_refuses_the_primary_as_secondary_on_the_field(admin_client):
    up("n1")
    r = admin_client.post(
        "/queues/tables/add/",
        {
            "name": "QT_FORM",
            "sort_order": "enq_time",
            "payload_type": "ANY",
            "primary_instance": "n1",
            "secondary_instance": "n1",
        },
    )
    assert r.status_code == 400
    assert "secondary_instance" in r.context["form"].errors
    assert not QueueTable.objects.filter(name="QT_FORM").exists()


def test_the_instances_page_and_the_ownership_log_list_what_happened(admin_client):
    up("n1")
    page = admin_client.get("/instances/")
    assert page.status_code == 200 and b'data-instance="n1"' in page.content
    admin_client.post(
        "/queues/tables/add/",
        {
            "name": "QT_LOG",
            "sort_order": "enq_time",
            "payload_type": "ANY",
            "primary_instance": "n1",
        },
    )
    log = admin_client.get("/queues/tables/ownership/")
    assert log.status_code == 200 and b'data-move="QT_LOG"' in log.content
    assert b'data-owner-move="QT_LOG"' in admin_client.get("/").content
