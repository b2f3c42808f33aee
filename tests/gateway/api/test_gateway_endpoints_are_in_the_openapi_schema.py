"""The gateway endpoints and their actions are in the OpenAPI schema, and no schema field is a
password that can be read back."""

from __future__ import annotations


def test_the_schema_lists_every_gateway_endpoint(monitor_api):
    r = monitor_api.get("/api/schema/?format=json")
    assert r.status_code == 200
    schema = r.json()
    paths = schema["paths"]
    for path, method in [
        ("/api/gateway/agents/", "post"),
        ("/api/gateway/agents/{id}/", "patch"),
        ("/api/gateway/agents/{id}/startup/", "post"),
        ("/api/gateway/agents/{id}/shutdown/", "post"),
        ("/api/gateway/agents/{id}/set-log-level/", "post"),
        ("/api/gateway/agents/{id}/cleanup/", "post"),
        ("/api/gateway/agents/{id}/options/", "delete"),
        ("/api/gateway/agents/{id}/log/", "get"),
        ("/api/gateway/links/{id}/test-connection/", "post"),
        ("/api/gateway/links/{id}/options/", "post"),
        ("/api/gateway/foreign-queues/", "post"),
        ("/api/gateway/jobs/{id}/", "delete"),
        ("/api/gateway/jobs/{id}/remove/", "post"),
        ("/api/gateway/jobs/{id}/reset/", "post"),
    ]:
        assert method in paths[path], (path, method)
    for name in ("GatewayAgent", "Link"):
        assert "password" not in schema["components"]["schemas"][name]["properties"]
