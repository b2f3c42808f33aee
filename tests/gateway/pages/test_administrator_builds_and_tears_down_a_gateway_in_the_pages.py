"""An administrator creates, alters and removes agents, links, foreign queues and jobs through
the pages, each form driven by the link type or the job's direction."""

from __future__ import annotations

from core import crypto
from gateway.models import Agent, ForeignQueue, Job, Link


def test_agent_create_alter_and_remove(admin_client, default_agent):
    r = admin_client.post(
        "/gateway/agents/add/",
        {"agent_name": "edge", "username": "", "max_memory": 128, "max_threads": 2},
    )
    agent = Agent.objects.get(name="EDGE")
    assert r.status_code == 302 and r["Location"] == f"/gateway/agents/{agent.pk}/"

    # A blank password leaves it unchanged; a username needs one.
    r = admin_client.post(
        f"/gateway/agents/{agent.pk}/edit/",
        {"username": "mgw_user", "password": "", "max_memory": 128, "max_threads": 2},
    )
    assert r.status_code == 400 and 'data-field="password"' in r.content.decode()
    admin_client.post(
        f"/gateway/agents/{agent.pk}/edit/",
        {"username": "mgw_user", "password": "pw1", "max_memory": 256, "max_threads": 2},
    )
    agent.refresh_from_db()
    token = agent.password_encrypted
    assert (agent.username, agent.max_memory, crypto.decrypt(token)) == ("mgw_user", 256, "pw1")
    admin_client.post(
        f"/gateway/agents/{agent.pk}/edit/",
        {"username": "mgw_user", "password": "", "max_memory": 256, "max_threads": 4},
    )
    agent.refresh_from_db()
    assert agent.password_encrypted == token and agent.max_threads == 4

    r = admin_client.post(f"/gateway/agents/{agent.pk}/delete/")
    assert r["Location"] == "/gateway/agents/"
    assert not Agent.objects.filter(name="EDGE").exists()


def test_altering_a_started_agent_says_it_takes_effect_after_restart(admin_client, default_agent):
    admin_client.post(f"/gateway/agents/{default_agent.pk}/start/")
    html = admin_client.get(f"/gateway/agents/{default_agent.pk}/edit/").content.decode()
    assert "takes effect after restart" in html
    r = admin_client.post(
        f"/gateway/agents/{default_agent.pk}/edit/",
        {"username": "", "max_memory": 512, "max_threads": 1},
        follow=True,
    )
    assert "after a restart" in r.content.decode()
    assert 'id="restart-required"' in r.content.decode()


def test_default_agent_cannot_be_removed_and_the_page_says_why(admin_client, default_agent):
    r = admin_client.post(f"/gateway/agents/{default_agent.pk}/delete/", follow=True)
    assert "DEFAULT_AGENT always exists" in r.content.decode()
    assert Agent.objects.filter(name="DEFAULT_AGENT").exists()


def test_a_link_form_asks_the_type_first_then_its_properties(admin_client, default_agent):
    html = admin_client.get("/gateway/links/add/").content.decode()
    assert 'name="link_type"' in html and "Continue" in html

    html = admin_client.get("/gateway/links/add/?link_type=AMQP").content.decode()
    assert 'name="properties.host"' in html and "host (required)" in html
    assert 'name="properties.virtual_host"' in html and "Default: /." in html
    assert 'name="properties.password"' not in html and 'name="password"' in html
    assert 'name="outbound_log_queue"' in html


def test_link_create_alter_and_remove(admin_client, default_agent):
    r = admin_client.post(
        "/gateway/links/add/?link_type=AMQP",
        {
            "linkname": "rabbit2",
            "agent": default_agent.pk,
            "properties.host": "127.0.0.1",
            "properties.port": "5673",
            "properties.tls": "FALSE",
            "properties.tls_verify": "TRUE",
            "password": "guest",
            "max_connections": 2,
            "outbound_log_queue": "mgw.log",
        },
    )
    link = Link.objects.get(name="RABBIT2")
    assert r["Location"] == f"/gateway/links/{link.pk}/"
    assert link.properties["port"] == 5673 and link.outbound_log_queue == "mgw.log"
    assert crypto.decrypt(link.password_encrypted) == "guest"

    html = admin_client.get(f"/gateway/links/{link.pk}/edit/").content.decode()
    assert "(fixed at creation)" in html and 'name="agent"' not in html
    admin_client.post(
        f"/gateway/links/{link.pk}/edit/",
        {
            "properties.host": "127.0.0.1",
            "properties.port": "5673",
            "properties.virtual_host": "/demo",
            "properties.tls": "FALSE",
            "properties.tls_verify": "TRUE",
            "password": "",
            "max_connections": 3,
            "outbound_log_queue": "mgw.log",
        },
    )
    link.refresh_from_db()
    assert (link.properties["virtual_host"], link.max_connections) == ("/demo", 3)
    assert crypto.decrypt(link.password_encrypted) == "guest"  # blank: unchanged

    html = admin_client.get(f"/gateway/links/{link.pk}/").content.decode()
    assert "EXACTLY_ONCE" in html and "Outbound log queue <code>mgw.log</code> is set" in html

    admin_client.post(f"/gateway/links/{link.pk}/delete/")
    assert not Link.objects.filter(name="RABBIT2").exists()


def test_foreign_queue_register_and_unregister(admin_client, amqp_link):
    html = admin_client.get(f"/gateway/foreign-queues/add/?link={amqp_link.pk}").content.decode()
    assert "creates nothing in the foreign system" in html
    assert 'name="options.RoutingKey"' in html and 'value="TOPIC"' in html

    admin_client.post(
        f"/gateway/foreign-queues/add/?link={amqp_link.pk}",
        {"name": "orders_out", "provider_queue": "", "domain": "TOPIC", "options.RoutingKey": "eu"},
    )
    fq = ForeignQueue.objects.get(name="ORDERS_OUT")
    assert (fq.provider_queue, fq.domain, fq.options) == (
        "ORDERS_OUT",
        "TOPIC",
        {"RoutingKey": "eu"},
    )
    assert "ORDERS_OUT@RABBIT" in admin_client.get("/gateway/foreign-queues/").content.decode()

    admin_client.post(f"/gateway/foreign-queues/{fq.pk}/delete/")
    assert not ForeignQueue.objects.filter(pk=fq.pk).exists()


def test_job_create_alter_and_remove(admin_client, gw_queues, foreign_queue):
    html = admin_client.get("/gateway/jobs/add/?direction=OUTBOUND").content.decode()
    assert "OUT_Q@RABBIT" in html and "MGW_ENVELOPE" in html

    r = admin_client.post(
        "/gateway/jobs/add/?direction=OUTBOUND",
        {
            "job_name": "j1",
            "propagation_type": "OUTBOUND",
            "source": "EVENTS",
            "destination": "OUT_Q@RABBIT",
            "rule": ":msg.region = 'EU'",
            "transformation": "MGW_ENVELOPE",
            "exception_queue": "AUDIT",
            "poll_interval": "2.5",
            "options.MsgBatchSize": "10",
            "options.PreserveMessageID": "TRUE",
            "enabled": "on",
        },
    )
    job = Job.objects.get(name="J1")
    assert r["Location"] == f"/gateway/jobs/{job.pk}/"
    assert job.options == {"MsgBatchSize": "10", "PreserveMessageID": "TRUE"}
    assert job.subscriber.name == "MGW_J1" and job.exception_name == "AUDIT"
    assert "J1" in admin_client.get("/gateway/jobs/?direction=OUTBOUND").content.decode()

    # ALTER_JOB: clear the exception queue and transformation, reset the poll interval, change
    # both options; the rule stays.
    r = admin_client.post(
        f"/gateway/jobs/{job.pk}/edit/",
        {
            "rule": ":msg.region = 'EU'",
            "transformation": "",
            "exception_queue": "",
            "poll_mode": "default",
            "options.MsgBatchSize": "20",
            "options.PreserveMessageID": "FALSE",
        },
    )
    assert r.status_code == 302, r.content.decode()
    job.refresh_from_db()
    assert (job.transformation, job.exception_queue, job.poll_interval) == ("", None, None)
    assert job.options == {"MsgBatchSize": "20", "PreserveMessageID": "FALSE"}
    assert job.rule == ":msg.region = 'EU'"

    # REMOVE_JOB: DELETE_PENDING first (the agent finishes it), then Force removes it at once.
    r = admin_client.post(f"/gateway/jobs/{job.pk}/remove/", {})
    job.refresh_from_db()
    assert job.status == "DELETE_PENDING" and r["Location"] == f"/gateway/jobs/{job.pk}/"
    html = admin_client.get(f"/gateway/jobs/{job.pk}/").content.decode()
    assert ">Disable<" not in html and "Alter</a>" not in html and "Remove</a>" in html
    r = admin_client.post(f"/gateway/jobs/{job.pk}/remove/", {"force": "on"})
    assert r["Location"] == "/gateway/jobs/" and not Job.objects.filter(pk=job.pk).exists()


def test_an_inbound_job_picks_a_foreign_source_and_our_destination(
    admin_client, gw_queues, foreign_queue
):
    html = admin_client.get("/gateway/jobs/add/?direction=INBOUND").content.decode()
    assert 'name="rule"' not in html
    admin_client.post(
        "/gateway/jobs/add/?direction=INBOUND",
        {
            "job_name": "J_IN",
            "propagation_type": "INBOUND",
            "source": "OUT_Q@RABBIT",
            "destination": "AUDIT",
            "enabled": "on",
        },
    )
    job = Job.objects.get(name="J_IN")
    assert (job.source_name, job.destination_name, job.direction) == (
        "OUT_Q@RABBIT",
        "AUDIT",
        "INBOUND",
    )


def test_emptying_a_job_option_removes_it(admin_client, outbound_job):
    from gateway import services as gw

    gw.job_alter(user=None, job=outbound_job, options={"MsgBatchSize": "10"})
    r = admin_client.post(
        f"/gateway/jobs/{outbound_job.pk}/edit/", {"poll_mode": "keep", "options.MsgBatchSize": ""}
    )
    assert r.status_code == 302
    outbound_job.refresh_from_db()
    assert outbound_job.options == {}
