"""Celery tasks of the gateway: thin, take ids only."""

from __future__ import annotations

from typing import Any

from celery import shared_task


# Not acks_late: an agent session outlives any broker redelivery timeout, and a dead agent is
# restarted by the reaper with a new start token (a redelivered old task would find it stale).
@shared_task(name="gateway.tasks.agent_run", bind=True, ignore_result=True, acks_late=False)
def agent_run(self: Any, agent_id: int, token: str) -> str:
    """The agent process for one start (gateway/agent.py)."""
    from django.conf import settings

    from gateway import agent

    return agent.run(
        agent_id,
        token,
        hostname=getattr(self.request, "hostname", "") or "",
        aq_instance=settings.AQ_INSTANCE_NAME,
    )


@shared_task(name="gateway.tasks.agent_reap", ignore_result=True)
def agent_reap() -> dict[str, int]:
    """Beat: agents whose process died go START_SCHEDULED (restartable) and are started again."""
    from gateway.services import agents_reap

    return agents_reap()
