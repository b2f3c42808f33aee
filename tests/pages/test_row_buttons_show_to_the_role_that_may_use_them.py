"""A table's row buttons (core.generic.ActionsColumn) show to a role that may use them only, and
do what they say."""

from __future__ import annotations

from queues import services
from queues.models import Agent, QueuePrivilege


def test_an_agents_drop_button_shows_to_administrators_only_and_drops_it(
    admin_client, operator_client, admin_user
):
    agent = services.agent_create(user=admin_user, name="APP_ROW")

    admin = admin_client.get("/queues/agents/").content.decode()
    operator = operator_client.get("/queues/agents/").content.decode()
    admin_client.post(f"/queues/agents/{agent.pk}/delete/")

    assert f'action="/queues/agents/{agent.pk}/delete/"' in admin
    assert 'type="submit">Drop</button>' in admin
    assert "/delete/" not in operator and ">Drop</button>" not in operator
    assert not Agent.objects.exists()


def test_a_grants_revoke_button_shows_to_administrators_only(
    admin_client, monitor_client, queue, operator_user
):
    admin_client.post(
        "/queues/privileges/grant/",
        {"queue": queue.pk, "user": operator_user.pk, "privilege": "DEQUEUE"},
    )
    grant = QueuePrivilege.objects.get()

    admin = admin_client.get("/queues/privileges/").content.decode()
    monitor = monitor_client.get("/queues/privileges/").content.decode()

    assert (
        f'action="/queues/privileges/{grant.pk}/revoke/"' in admin and ">Revoke</button>" in admin
    )
    assert ">Revoke</button>" not in monitor
