"""Roles through /api/gateway/: Monitor reads, Operator runs (start/stop, log level, cleanup,
jobs, test connection), Administrator configures; refused requests change nothing."""

from __future__ import annotations

from gateway.models import Agent, Job, Link


def test_monitor_reads_everything_and_writes_nothing(monitor_api, default_agent, outbound_job):
    for path in ("agents", "links", "foreign-queues", "jobs"):
        assert monitor_api.get(f"/api/gateway/{path}/").status_code == 200
    assert monitor_api.get("/api/gateway/agents/DEFAULT_AGENT/log/").status_code == 200
    for path, body in [
        ("/api/gateway/agents/DEFAULT_AGENT/startup/", {}),
        ("/api/gateway/jobs/JOB_OUT/disable/", {}),
        ("/api/gateway/links/RABBIT/test-connection/", {}),
        ("/api/gateway/agents/DEFAULT_AGENT/cleanup/", {"action": "CLEAN_LOG_QUEUES"}),
    ]:
        assert monitor_api.post(path, body).status_code == 403, path
    assert Agent.objects.get().status == "NOT_STARTED" and Job.objects.get().enabled


def test_operator_runs_but_cannot_configure(operator_api, default_agent, outbound_job):
    assert operator_api.post("/api/gateway/agents/DEFAULT_AGENT/startup/").status_code == 200
    assert operator_api.post("/api/gateway/agents/DEFAULT_AGENT/shutdown/").status_code == 200
    assert operator_api.post("/api/gateway/jobs/JOB_OUT/disable/").status_code == 200
    r = operator_api.post("/api/gateway/links/RABBIT/test-connection/")
    assert r.status_code == 200 and r.json()["ok"] is False

    refused = [
        (
            "post",
            "/api/gateway/links/",
            {"linkname": "X", "link_type": "AMQP", "properties": {"host": "h"}},
        ),
        ("patch", "/api/gateway/links/RABBIT/", {"max_connections": 5}),
        ("delete", "/api/gateway/jobs/JOB_OUT/", None),
        ("post", "/api/gateway/agents/", {"agent_name": "A2"}),
        ("post", "/api/gateway/agents/DEFAULT_AGENT/options/", {"name": "a", "value": "b"}),
        ("post", "/api/gateway/foreign-queues/", {"name": "Q2", "link": "RABBIT"}),
    ]
    for method, path, body in refused:
        assert getattr(operator_api, method)(path, body).status_code == 403, path
    assert Link.objects.get().max_connections == 1 and Job.objects.get().status == "READY"
    assert Agent.objects.count() == 1
