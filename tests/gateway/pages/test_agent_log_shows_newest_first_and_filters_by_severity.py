"""The agent log on the agent's page: newest line first, ERROR and WARN lines highlighted, a
severity filter, and a live fragment the page polls."""

from __future__ import annotations

from gateway.models import AgentLogLine


def test_the_log_is_newest_first_highlighted_and_filtered(monitor_client, default_agent):
    for severity, text in [("INFO", "first line"), ("WARN", "a warning"), ("ERROR", "it broke")]:
        AgentLogLine.objects.create(
            agent=default_agent,
            severity=severity,
            text=text,
            code="415" if severity == "ERROR" else "",
        )

    html = monitor_client.get(f"/gateway/agents/{default_agent.pk}/").content.decode()
    assert html.index("it broke") < html.index("a warning") < html.index("first line")
    assert 'data-severity="ERROR" class="table-danger"' in html
    assert 'data-severity="WARN" class="table-warning"' in html and "MGW-415" in html

    fragment = monitor_client.get(
        f"/gateway/agents/{default_agent.pk}/log/?severity=WARN"
    ).content.decode()
    assert "<html" not in fragment and 'hx-trigger="every 2s"' in fragment
    assert "a warning" in fragment and "it broke" in fragment and "first line" not in fragment
    errors = monitor_client.get(
        f"/gateway/agents/{default_agent.pk}/log/?severity=ERROR"
    ).content.decode()
    assert "it broke" in errors and "a warning" not in errors
