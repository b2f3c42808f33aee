"""The propagation endpoints are documented in the OpenAPI schema, which still generates
without a single warning."""

from __future__ import annotations

import yaml


def test_every_propagation_endpoint_and_verb_is_in_the_schema(client, monitor_user):
    client.force_login(monitor_user)

    paths = yaml.safe_load(client.get("/api/schema/").content)["paths"]

    assert {"get", "post"} <= set(paths["/api/propagations/"])
    assert {"get", "put", "patch", "delete"} <= set(paths["/api/propagations/{id}/"])
    verbs = ("start", "stop", "schedule", "alter-schedule", "enable", "disable", "reset")
    for verb in (*verbs, "unschedule"):
        assert "post" in paths[f"/api/propagations/{{id}}/{verb}/"], verb
    assert "get" in paths["/api/propagations/{id}/runs/"]
    for path in ("/api/propagation-runs/", "/api/workers/", "/api/topology/", "/api/attention/"):
        assert "get" in paths[path], path
    assert {"get", "put", "patch"} <= set(paths["/api/maintenance/"])
    assert "post" in paths["/api/trace/"]
    params = {p["name"] for p in paths["/api/propagations/"]["get"]["parameters"]}
    assert {"state", "queue", "has_backlog", "failing", "q", "ordering"} <= params
    run_params = {p["name"] for p in paths["/api/propagations/{id}/runs/"]["get"]["parameters"]}
    assert {"state", "worker", "failed", "limit"} <= run_params


def test_the_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "schema.yaml"

    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))

    assert "/api/propagations/{id}/alter-schedule/" in out.read_text()
