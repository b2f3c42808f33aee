"""An operator starts and stops agents and runs jobs from the pages; creating, altering and
removing are refused (403) even when the POST is forged, and change nothing."""

from __future__ import annotations

from gateway.models import Agent, Job, Link


def test_start_schedules_the_agent_and_shutdown_withdraws_it(operator_client, default_agent):
    response = operator_client.post(f"/gateway/agents/{default_agent.pk}/start/", follow=True)
    assert response.status_code == 200
    default_agent.refresh_from_db()
    assert default_agent.status == "START_SCHEDULED"
    html = response.content.decode()
    assert 'data-mgw="START_SCHEDULED"' in html
    # No worker serves mgw.DEFAULT_AGENT here: the page says how to start one.
    assert "celery -A console worker -Q mgw.DEFAULT_AGENT" in html

    operator_client.post(f"/gateway/agents/{default_agent.pk}/shutdown/")
    default_agent.refresh_from_db()
    assert default_agent.status == "NOT_STARTED"


def test_a_second_start_is_refused_with_the_reason(operator_client, default_agent):
    operator_client.post(f"/gateway/agents/{default_agent.pk}/start/")
    response = operator_client.post(f"/gateway/agents/{default_agent.pk}/start/", follow=True)
    assert "already START_SCHEDULED" in response.content.decode()


def test_operator_sets_the_log_level_only_of_a_running_agent_and_runs_jobs(
    operator_client, default_agent, outbound_job
):
    page = operator_client.get(f"/gateway/agents/{default_agent.pk}/").content.decode()
    assert "the agent must be RUNNING" in page and "Set log level</button>" not in page
    r = operator_client.post(f"/gateway/agents/{default_agent.pk}/log-level/", {"log_level": 3})
    assert r.status_code == 400 and "needs a RUNNING agent" in r.content.decode()
    default_agent.refresh_from_db()
    assert default_agent.log_level == 0

    operator_client.post(f"/gateway/jobs/{outbound_job.pk}/disable/")
    assert not Job.objects.get(pk=outbound_job.pk).enabled
    operator_client.post(f"/gateway/jobs/{outbound_job.pk}/enable/")
    assert Job.objects.get(pk=outbound_job.pk).enabled


def test_operator_cannot_create_alter_or_remove(
    operator_client, default_agent, amqp_link, outbound_job
):
    posts = [
        ("/gateway/links/add/?link_type=AMQP", {"linkname": "L2", "properties.host": "h"}),
        (f"/gateway/links/{amqp_link.pk}/edit/", {"max_connections": 3}),
        (f"/gateway/links/{amqp_link.pk}/delete/", {}),
        ("/gateway/agents/add/", {"agent_name": "A2", "max_memory": 64, "max_threads": 1}),
        (f"/gateway/agents/{default_agent.pk}/options/", {"name": "x", "value": "y"}),
        (f"/gateway/jobs/{outbound_job.pk}/remove/", {"force": "on"}),
        (f"/gateway/jobs/{outbound_job.pk}/edit/", {"poll_mode": "keep"}),
    ]
    for path, data in posts:
        assert operator_client.post(path, data).status_code == 403, path
    assert list(Link.objects.values_list("name", "max_connections")) == [("RABBIT", 1)]
    assert list(Agent.objects.values_list("name", flat=True)) == ["DEFAULT_AGENT"]
    assert Job.objects.get().status == "READY"


def test_monitor_cannot_even_start_an_agent(monitor_client, default_agent, outbound_job):
    for path in (
        f"/gateway/agents/{default_agent.pk}/start/",
        f"/gateway/agents/{default_agent.pk}/cleanup/",
        f"/gateway/jobs/{outbound_job.pk}/disable/",
        f"/gateway/links/{outbound_job.link_id}/test/",
    ):
        assert monitor_client.post(path, {"action": "CLEAN_LOG_QUEUES"}).status_code == 403, path
    default_agent.refresh_from_db()
    assert default_agent.status == "NOT_STARTED"
