"""Bad page input comes back as a 400 with the message next to its input (the service's field,
``properties.port`` on the port's input), and writes nothing."""

from __future__ import annotations

import re

from core.models import ChangeLogEntry
from gateway.models import ForeignQueue, Job, Link


def _errors(response) -> dict[str, str]:  # type: ignore[no-untyped-def]
    html = response.content.decode()
    return dict(re.findall(r'data-field="([^"]+)">([^<]*)<', html))


def test_a_bad_property_is_shown_on_its_input(admin_client, default_agent):
    before = ChangeLogEntry.objects.count()
    r = admin_client.post(
        "/gateway/links/add/?link_type=AMQP",
        {
            "linkname": "L",
            "agent": default_agent.pk,
            "properties.host": "h",
            "properties.port": "99999",
            "max_connections": 1,
        },
    )
    assert r.status_code == 400
    assert "65535" in _errors(r)["properties.port"]
    r = admin_client.post(
        "/gateway/links/add/?link_type=AMQP",
        {"linkname": "L", "agent": default_agent.pk, "properties.host": "", "max_connections": 1},
    )
    assert r.status_code == 400 and "required" in _errors(r)["properties.host"]
    assert not Link.objects.exists() and ChangeLogEntry.objects.count() == before


def test_a_second_job_on_the_same_queue_names_the_source(admin_client, outbound_job):
    r = admin_client.post(
        "/gateway/jobs/add/?direction=OUTBOUND",
        {
            "job_name": "J2",
            "propagation_type": "OUTBOUND",
            "source": "ORDERS",
            "destination": "OUT_Q@RABBIT",
        },
    )
    assert r.status_code == 400
    assert "already the source of job JOB_OUT" in _errors(r)["source"]
    assert Job.objects.count() == 1


def test_the_exception_queue_cannot_be_the_source(admin_client, gw_queues, foreign_queue):
    r = admin_client.post(
        "/gateway/jobs/add/?direction=OUTBOUND",
        {
            "job_name": "J2",
            "propagation_type": "OUTBOUND",
            "source": "ORDERS",
            "destination": "OUT_Q@RABBIT",
            "exception_queue": "ORDERS",
        },
    )
    assert r.status_code == 400
    assert "cannot be the source" in _errors(r)["exception_queue"]
    assert not Job.objects.exists()


def test_a_bad_job_option_is_shown_on_its_input(admin_client, gw_queues, foreign_queue):
    r = admin_client.post(
        "/gateway/jobs/add/?direction=OUTBOUND",
        {
            "job_name": "J2",
            "propagation_type": "OUTBOUND",
            "source": "ORDERS",
            "destination": "OUT_Q@RABBIT",
            "options.MsgBatchSize": "500",
        },
    )
    assert r.status_code == 400 and "between 1 and 100" in _errors(r)["options.MsgBatchSize"]
    r = admin_client.post(
        "/gateway/jobs/add/?direction=OUTBOUND",
        {
            "job_name": "J2",
            "propagation_type": "OUTBOUND",
            "source": "ORDERS",
            "destination": "OUT_Q@RABBIT",
            "options": "NoSuchOption=1",
        },
    )
    assert r.status_code == 400 and "no option NoSuchOption" in _errors(r)["options"]
    assert not Job.objects.exists()


def test_a_domain_the_link_type_does_not_take_is_not_offered_and_refused(admin_client, amqp_link):
    r = admin_client.post(
        f"/gateway/foreign-queues/add/?link={amqp_link.pk}", {"name": "Q", "domain": "NOPE"}
    )
    assert r.status_code == 400 and "domain" in _errors(r)
    assert not ForeignQueue.objects.exists()


def test_unregistering_a_queue_a_job_uses_says_which_job(admin_client, outbound_job):
    fq = outbound_job.destination_foreign
    r = admin_client.post(f"/gateway/foreign-queues/{fq.pk}/delete/", follow=True)
    assert "used by job JOB_OUT" in r.content.decode()
    assert ForeignQueue.objects.filter(pk=fq.pk).exists()


def test_actions_on_a_delete_pending_job_are_refused_with_the_status(admin_client, outbound_job):
    admin_client.post(f"/gateway/jobs/{outbound_job.pk}/remove/", {})
    r = admin_client.post(f"/gateway/jobs/{outbound_job.pk}/disable/", follow=True)
    assert "DELETE_PENDING: only REMOVE_JOB applies" in r.content.decode()
    assert Job.objects.get().enabled


def test_cleanup_of_a_stopped_agent_says_why_not(operator_client, default_agent):
    r = operator_client.post(
        f"/gateway/agents/{default_agent.pk}/cleanup/", {"action": "CLEAN_STARTUP_STATE"}
    )
    assert r.status_code == 400 and "no startup state to clean" in r.content.decode()
    r = operator_client.post(
        f"/gateway/agents/{default_agent.pk}/cleanup/", {"action": "RESET_SUB_MISSING_MESSAGE"}
    )
    assert r.status_code == 400 and "needs a RUNNING agent" in r.content.decode()


def test_an_unknown_service_is_shown_on_its_input_and_a_known_one_is_kept(
    admin_client, default_agent, gw_queues
):
    from gateway.models import Agent
    from queues.models import DbaService

    before = ChangeLogEntry.objects.count()
    form = {"agent_name": "EDGE", "max_memory": 64, "max_threads": 1, "service": "SYS$X.NOPE"}
    r = admin_client.post("/gateway/agents/add/", form)
    assert r.status_code == 400 and "Unknown service" in _errors(r)["service"]
    assert not Agent.objects.filter(name="EDGE").exists()
    assert ChangeLogEntry.objects.count() == before
    service = DbaService.objects.get(queue_name="ORDERS").name
    r = admin_client.post(
        f"/gateway/agents/{default_agent.pk}/edit/",
        {"max_memory": 64, "max_threads": 1, "service": service.lower()},
    )
    assert r.status_code == 302, r.content.decode()[-2000:]
    assert Agent.objects.get(pk=default_agent.pk).service == service
    page = admin_client.get(f"/gateway/agents/{default_agent.pk}/").content.decode()
    assert f"service {service}" in page
