"""Test connection (an HTMX button on the link page) answers with the reason a connection
failed, or the server it reached."""

from __future__ import annotations

from gateway import services as gw


def test_a_closed_port_shows_the_reason(operator_client, amqp_link):
    r = operator_client.post(f"/gateway/links/{amqp_link.pk}/test/", HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert r.status_code == 200 and 'data-test-result="failed"' in html
    assert "127.0.0.1" in html or "refused" in html.lower()


def test_a_plain_post_puts_the_result_in_the_message_bar(operator_client, amqp_link):
    r = operator_client.post(f"/gateway/links/{amqp_link.pk}/test/", follow=True)
    assert "Connection failed:" in r.content.decode()


def test_the_local_broker_answers(admin_user, operator_client, default_agent):
    link = gw.link_create(
        user=admin_user,
        name="LOCAL_RABBIT",
        link_type="AMQP",
        properties={"host": "127.0.0.1", "port": 5672, "username": "guest"},
        password="guest",
    )
    r = operator_client.post(f"/gateway/links/{link.pk}/test/", HTTP_HX_REQUEST="true")
    assert 'data-test-result="ok"' in r.content.decode(), r.content.decode()
