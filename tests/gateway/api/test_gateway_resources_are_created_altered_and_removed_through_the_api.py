"""Agents, links, foreign queues and jobs through /api/gateway/: every DBMS_MGWADM verb is a
request, PATCH alters only the fields given (NO_CHANGE for the rest)."""

from __future__ import annotations

from core import crypto
from gateway.models import Agent, ForeignQueue, Job, Link


def test_agent_lifecycle(admin_api, operator_api, default_agent):
    r = admin_api.post("/api/gateway/agents/", {"agent_name": "edge", "max_threads": 2})
    assert r.status_code == 201, r.json()
    assert (r.json()["name"], r.json()["status"], r.json()["ping"]) == ("EDGE", "NOT_STARTED", None)

    r = admin_api.patch("/api/gateway/agents/EDGE/", {"comment": "edge site"})
    agent = Agent.objects.get(name="EDGE")
    assert r.status_code == 200 and agent.comment == "edge site" and agent.max_threads == 2

    r = operator_api.post("/api/gateway/agents/EDGE/startup/")
    assert r.status_code == 409 and "no agent user" in r.json()["username"][0]
    r = admin_api.patch("/api/gateway/agents/EDGE/", {"username": "edge_role", "password": "pw"})
    assert r.status_code == 200 and r.json()["username"] == "edge_role"
    r = operator_api.post("/api/gateway/agents/EDGE/startup/")
    assert r.status_code == 200 and r.json()["status"] == "START_SCHEDULED"
    r = admin_api.patch("/api/gateway/agents/EDGE/", {"max_memory": 128})
    assert r.json()["restart_required"] == ["max_memory"]
    r = operator_api.post("/api/gateway/agents/EDGE/shutdown/", {"mode": "IMMEDIATE"})
    assert r.status_code == 200 and r.json()["status"] == "NOT_STARTED"

    # SET_LOG_LEVEL needs a RUNNING agent (tests/gateway/runtime has the running case).
    r = operator_api.post("/api/gateway/agents/EDGE/set-log-level/", {"log_level": 4})
    assert r.status_code == 409 and "RUNNING" in r.json()["status"][0]
    assert r.json() and Agent.objects.get(name="EDGE").log_level == 0

    assert admin_api.delete("/api/gateway/agents/EDGE/").status_code == 204
    assert not Agent.objects.filter(name="EDGE").exists()


def test_agent_options_and_log(admin_api, default_agent):
    from gateway.models import AgentLogLine

    r = admin_api.post(
        "/api/gateway/agents/DEFAULT_AGENT/options/",
        {"name": "oracle.mgw.batch_size", "value": "20"},
    )
    assert r.status_code == 200 and r.json() == [
        {"name": "oracle.mgw.batch_size", "value": "20", "encrypted": False}
    ]
    r = admin_api.post(
        "/api/gateway/agents/DEFAULT_AGENT/options/",
        {"name": "oracle.mgw.batch_size", "value": "500"},
    )
    assert r.status_code == 400 and "value" in r.json()
    r = admin_api.delete("/api/gateway/agents/DEFAULT_AGENT/options/?name=oracle.mgw.batch_size")
    assert r.status_code == 204
    r = admin_api.delete("/api/gateway/agents/DEFAULT_AGENT/options/?name=nope")
    assert r.status_code == 404 and "name" in r.json()

    for severity in ("INFO", "ERROR"):
        AgentLogLine.objects.create(agent=default_agent, severity=severity, text=severity.lower())
    r = admin_api.get("/api/gateway/agents/DEFAULT_AGENT/log/")
    assert [line["text"] for line in r.json()] == ["error", "info"]
    r = admin_api.get("/api/gateway/agents/DEFAULT_AGENT/log/?severity=ERROR")
    assert [line["text"] for line in r.json()] == ["error"]


def test_link_lifecycle(admin_api, default_agent):
    r = admin_api.post(
        "/api/gateway/links/",
        {
            "linkname": "rabbit",
            "link_type": "AMQP",
            "properties": {"host": "127.0.0.1", "port": 1},
            "password": "guest",
            "outbound_log_queue": "mgw.log",
        },
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["agent"] == "DEFAULT_AGENT" and body["has_password"] is True
    assert body["properties"]["port"] == 1 and "password" not in body["properties"]
    assert body["guarantees"]["outbound"]["guarantee"] == "EXACTLY_ONCE"
    assert body["guarantees"]["outbound_log_queue_set"] is True

    r = admin_api.patch("/api/gateway/links/RABBIT/", {"properties": {"heartbeat": 45}})
    link = Link.objects.get(name="RABBIT")
    assert r.status_code == 200 and link.properties["heartbeat"] == 45
    assert link.properties["host"] == "127.0.0.1"  # merged, not replaced
    assert crypto.decrypt(link.password_encrypted) == "guest"  # absent: unchanged

    r = admin_api.patch("/api/gateway/links/RABBIT/", {"link_type": "MQTT"})
    assert r.status_code == 400 and "link_type" in r.json()

    assert admin_api.delete("/api/gateway/links/RABBIT/").status_code == 204


def test_foreign_queue_register_and_unregister(admin_api, amqp_link):
    r = admin_api.post(
        "/api/gateway/foreign-queues/",
        {"name": "events", "link": "RABBIT", "domain": "TOPIC", "options": {"RoutingKey": "eu"}},
    )
    assert r.status_code == 201, r.json()
    assert r.json()["address"] == "EVENTS@RABBIT" and r.json()["provider_queue"] == "EVENTS"
    assert admin_api.get("/api/gateway/foreign-queues/EVENTS@RABBIT/").json()["jobs"] == []
    assert admin_api.get("/api/gateway/foreign-queues/?domain=TOPIC").json()["count"] == 1
    assert admin_api.delete("/api/gateway/foreign-queues/EVENTS@RABBIT/").status_code == 204
    assert not ForeignQueue.objects.exists()


def test_job_lifecycle(admin_api, operator_api, gw_queues, foreign_queue):
    r = admin_api.post(
        "/api/gateway/jobs/",
        {
            "job_name": "j1",
            "propagation_type": "OUTBOUND",
            "source": "EVENTS",
            "destination": "OUT_Q@RABBIT",
            "exception_queue": "AUDIT",
            "poll_interval": 2,
            "options": {"MsgBatchSize": "10"},
        },
    )
    assert r.status_code == 201, r.json()
    assert (r.json()["status"], r.json()["agent"], r.json()["subscriber"]) == (
        "READY",
        "DEFAULT_AGENT",
        "MGW_J1",
    )

    # Absent fields stay; "" clears; null resets the poll interval; options merge.
    r = admin_api.patch(
        "/api/gateway/jobs/J1/",
        {"exception_queue": "", "poll_interval": None, "options": {"PreserveMessageID": "true"}},
    )
    assert r.status_code == 200, r.json()
    job = Job.objects.get(name="J1")
    assert (job.exception_queue, job.poll_interval) == (None, None)
    assert job.options == {"MsgBatchSize": "10", "PreserveMessageID": "TRUE"}
    r = admin_api.patch("/api/gateway/jobs/J1/", {"comments": "x"})
    job.refresh_from_db()
    assert job.options["MsgBatchSize"] == "10" and job.comment == "x"

    assert operator_api.post("/api/gateway/jobs/J1/disable/").json()["enabled"] is False
    assert operator_api.post("/api/gateway/jobs/J1/enable/").json()["enabled"] is True
    Job.objects.filter(pk=job.pk).update(status="FAILED", failures=16)
    r = operator_api.post("/api/gateway/jobs/J1/reset/")
    assert (r.json()["status"], r.json()["failures"]) == ("READY", 0)

    assert admin_api.get("/api/gateway/jobs/?direction=OUTBOUND&status=READY").json()["count"] == 1
    assert admin_api.get("/api/gateway/jobs/?enabled=false").json()["count"] == 0


def test_delete_is_remove_job_and_force_removes_at_once(admin_api, outbound_job):
    r = admin_api.delete("/api/gateway/jobs/JOB_OUT/")
    assert r.status_code == 202 and r.json()["status"] == "DELETE_PENDING"

    r = admin_api.post("/api/gateway/jobs/JOB_OUT/enable/")
    assert r.status_code == 409 and "DELETE_PENDING" in r.json()["status"][0]
    r = admin_api.patch("/api/gateway/jobs/JOB_OUT/", {"comments": "x"})
    assert r.status_code == 409 and "status" in r.json()

    r = admin_api.post("/api/gateway/jobs/JOB_OUT/remove/", {"force": True})
    assert r.status_code == 204 and not Job.objects.exists()
