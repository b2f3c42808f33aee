"""Every gateway page renders for every role, and shows only the buttons the role may use:
Monitor none, Operator the run-time ones (start/stop, log level, cleanup, enable/disable/reset,
test connection), Administrator all of them."""

from __future__ import annotations

import pytest

from gateway.models import AgentLogLine


@pytest.fixture
def pages(default_agent, amqp_link, foreign_queue, outbound_job) -> list[str]:
    AgentLogLine.objects.create(agent=default_agent, severity="INFO", text="agent started")
    return [
        "/gateway/",
        "/gateway/status/",
        "/gateway/agents/",
        f"/gateway/agents/{default_agent.pk}/",
        f"/gateway/agents/{default_agent.pk}/status/",
        f"/gateway/agents/{default_agent.pk}/log/",
        "/gateway/links/",
        f"/gateway/links/{amqp_link.pk}/",
        "/gateway/foreign-queues/",
        "/gateway/jobs/",
        f"/gateway/jobs/{outbound_job.pk}/",
        f"/gateway/jobs/{outbound_job.pk}/status/",
    ]


@pytest.mark.parametrize("role", ["admin", "operator", "monitor"])
def test_every_gateway_page_renders_for_every_role(request, role, pages):
    client = request.getfixturevalue(f"{role}_client")
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert b"Traceback" not in response.content


def _html(client, path: str) -> str:  # type: ignore[no-untyped-def]
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_the_agent_page_shows_each_role_its_buttons(
    admin_client, operator_client, monitor_client, default_agent
):
    path = f"/gateway/agents/{default_agent.pk}/"
    admin, operator, monitor = (
        _html(c, path) for c in (admin_client, operator_client, monitor_client)
    )

    for html in (admin, operator):
        assert ">Start<" in html and "Cleanup" in html and "Set log level" in html
    assert "Alter</a>" in admin and "Remove</a>" in admin and "Set option" in admin
    assert "Alter</a>" not in operator and "Set option" not in operator
    for button in (">Start<", "Cleanup", "Set log level", "Set option", "Remove</a>"):
        assert button not in monitor


def test_the_job_page_shows_each_role_its_buttons(
    admin_client, operator_client, monitor_client, outbound_job
):
    path = f"/gateway/jobs/{outbound_job.pk}/"
    admin, operator, monitor = (
        _html(c, path) for c in (admin_client, operator_client, monitor_client)
    )

    assert ">Disable<" in admin and "Remove</a>" in admin and "Alter</a>" in admin
    assert ">Disable<" in operator and "Remove</a>" not in operator and "Alter</a>" not in operator
    assert ">Disable<" not in monitor and "Remove</a>" not in monitor
    assert "FAILED jobs are reset when the agent starts" in monitor


def test_the_link_page_offers_test_connection_to_operators_only(
    admin_client, operator_client, monitor_client, amqp_link
):
    path = f"/gateway/links/{amqp_link.pk}/"
    assert "Test connection" in _html(admin_client, path)
    assert "Test connection" in _html(operator_client, path)
    assert "Test connection" not in _html(monitor_client, path)
    assert "Alter</a>" not in _html(operator_client, path)


def test_lists_offer_add_to_administrators_only(admin_client, operator_client, default_agent):
    for path in (
        "/gateway/agents/",
        "/gateway/links/",
        "/gateway/foreign-queues/",
        "/gateway/jobs/",
    ):
        assert 'id="add-button"' in _html(admin_client, path)
        assert 'id="add-button"' not in _html(operator_client, path)


def test_the_foreign_queue_list_offers_unregister_to_administrators_only(
    admin_client, operator_client, foreign_queue
):
    link = f'href="/gateway/foreign-queues/{foreign_queue.pk}/delete/">Unregister</a>'
    assert link in _html(admin_client, "/gateway/foreign-queues/")
    assert "Unregister" not in _html(operator_client, "/gateway/foreign-queues/")


def test_the_remove_pages_ask_under_the_gateway_tabs(admin_client, operator_client, amqp_link):
    html = _html(admin_client, f"/gateway/links/{amqp_link.pk}/delete/")

    assert 'id="gateway-nav"' in html and f"Remove link {amqp_link.name}?" in html
    assert f'href="/gateway/links/{amqp_link.pk}/">Cancel</a>' in html
    assert 'type="submit">Remove link</button>' in html
    assert operator_client.get(f"/gateway/links/{amqp_link.pk}/delete/").status_code == 403
