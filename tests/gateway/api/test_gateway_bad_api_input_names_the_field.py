"""Bad input through /api/gateway/ is a 400/404/409 naming the field, and writes nothing."""

from __future__ import annotations

from core.models import ChangeLogEntry
from gateway.models import ForeignQueue, Job, Link


def test_a_property_the_type_does_not_have(admin_api, default_agent):
    before = ChangeLogEntry.objects.count()
    r = admin_api.post(
        "/api/gateway/links/",
        {"linkname": "L", "link_type": "AMQP", "properties": {"host": "h", "qos": 1}},
    )
    assert r.status_code == 400 and "qos" in r.json()["properties.qos"][0]
    r = admin_api.post(
        "/api/gateway/links/", {"linkname": "L", "link_type": "AMQP", "properties": {}}
    )
    assert r.status_code == 400 and "properties.host" in r.json()
    assert not Link.objects.exists() and ChangeLogEntry.objects.count() == before


def test_an_unknown_option(admin_api, amqp_link, gw_queues):
    r = admin_api.post("/api/gateway/links/RABBIT/options/", {"name": "Nope", "value": "1"})
    assert r.status_code == 400 and "Nope" in r.json()["options"][0]
    r = admin_api.post(
        "/api/gateway/foreign-queues/", {"name": "Q", "link": "RABBIT", "options": {"Nope": "1"}}
    )
    assert r.status_code == 400 and "Nope" in r.json()["options"][0]
    assert not ForeignQueue.objects.exists() and Link.objects.get().options == {}


def test_a_second_job_on_the_same_queue_source(admin_api, outbound_job):
    r = admin_api.post(
        "/api/gateway/jobs/",
        {
            "job_name": "J2",
            "propagation_type": "OUTBOUND",
            "source": "ORDERS",
            "destination": "OUT_Q@RABBIT",
        },
    )
    assert r.status_code == 409 and "JOB_OUT" in r.json()["source"][0]
    assert Job.objects.count() == 1


def test_the_exception_queue_is_the_source(admin_api, gw_queues, foreign_queue):
    r = admin_api.post(
        "/api/gateway/jobs/",
        {
            "job_name": "J2",
            "propagation_type": "OUTBOUND",
            "source": "ORDERS",
            "destination": "OUT_Q@RABBIT",
            "exception_queue": "ORDERS",
        },
    )
    assert r.status_code == 400 and "exception_queue" in r.json()
    assert not Job.objects.exists()


def test_a_bad_job_option_and_a_foreign_queue_not_registered(admin_api, gw_queues, foreign_queue):
    base = {"job_name": "J2", "propagation_type": "OUTBOUND", "source": "ORDERS"}
    r = admin_api.post("/api/gateway/jobs/", {**base, "destination": "NOPE@RABBIT"})
    assert r.status_code == 400 and "destination" in r.json()
    r = admin_api.post(
        "/api/gateway/jobs/",
        {**base, "destination": "OUT_Q@RABBIT", "options": {"MsgBatchSize": "0"}},
    )
    assert r.status_code == 400 and "MsgBatchSize" in r.json()["options"][0]
    assert not Job.objects.exists()


def test_refusals_of_state(admin_api, default_agent, outbound_job):
    r = admin_api.delete("/api/gateway/agents/DEFAULT_AGENT/")
    assert r.status_code == 409 and "DEFAULT_AGENT" in r.json()["agent_name"][0]
    r = admin_api.delete("/api/gateway/foreign-queues/OUT_Q@RABBIT/")
    assert r.status_code == 409 and "JOB_OUT" in r.json()["detail"]
    r = admin_api.post("/api/gateway/agents/DEFAULT_AGENT/shutdown/")
    assert r.status_code == 409 and "status" in r.json()
    r = admin_api.post("/api/gateway/agents/DEFAULT_AGENT/set-log-level/", {"log_level": 9})
    assert r.status_code == 400 and "log_level" in r.json()
    assert admin_api.get("/api/gateway/jobs/NOPE/").status_code == 404


def test_an_unknown_direction(admin_api, gw_queues, foreign_queue):
    r = admin_api.post(
        "/api/gateway/jobs/",
        {"job_name": "J", "propagation_type": "SIDEWAYS", "source": "ORDERS", "destination": "X"},
    )
    assert r.status_code == 400 and "propagation_type" in r.json()
