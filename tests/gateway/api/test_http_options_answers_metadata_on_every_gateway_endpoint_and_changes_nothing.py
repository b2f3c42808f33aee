"""HTTP OPTIONS on every /api/gateway/ route (lists, details and every action) answers 200 with
DRF's metadata, whatever the query string, and writes nothing: the agent and link option
actions are routed at ``options/`` without taking over the OPTIONS verb (issue 12, #9)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from core.models import ChangeLogEntry
from gateway import services as gw
from gateway.api.urls import urlpatterns
from gateway.models import Agent, AgentOption, ForeignQueue, Job, Link


def _state() -> list[Any]:
    return [
        list(model.objects.order_by("pk").values())
        for model in (Agent, AgentOption, Link, ForeignQueue, Job, ChangeLogEntry)
    ]


def test_options_on_every_gateway_route_is_metadata_and_writes_nothing(
    admin_api, admin_user, default_agent, outbound_job
):
    gw.agent_option_set(
        user=admin_user, agent=default_agent, name="oracle.mgw.batch_size", value="10"
    )
    keys = {
        "mgw-agent": "DEFAULT_AGENT",
        "mgw-link": "RABBIT",
        "mgw-foreignqueue": "OUT_Q@RABBIT",
        "mgw-job": "JOB_OUT",
    }
    # Route name → whether it takes the object's key (detail routes) or not (list-level ones).
    routes = {
        p.name: "<pk>" in str(p.pattern) or "(?P<pk>" in str(p.pattern)
        for p in urlpatterns
        if p.name and p.name.startswith("mgw-")
    }
    paths = [_path(name, keys, detail) for name, detail in sorted(routes.items())]
    # Every list, detail and action route of the router is here, the option routes included.
    assert "/api/gateway/agents/DEFAULT_AGENT/options/" in paths
    assert "/api/gateway/links/RABBIT/options/" in paths
    assert "/api/gateway/jobs/bulk/" in paths
    assert len(paths) == 21

    before = _state()
    for path in paths:
        for query in ("", "?name=oracle.mgw.batch_size"):
            r = admin_api.options(path + query)
            assert r.status_code == 200, (path, query, r.status_code, r.content[:300])
            body = r.json()
            assert body["name"] and "renders" in body and "parses" in body, (path, body)
    assert _state() == before
    assert AgentOption.objects.filter(name="oracle.mgw.batch_size").exists()


def _path(name: str, keys: dict[str, str], detail: bool) -> str:
    base = next(k for k in keys if name.startswith(k + "-"))
    return reverse(name, kwargs={"pk": keys[base]} if detail else {})
