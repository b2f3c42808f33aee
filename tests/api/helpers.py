"""A snapshot of the queue tables, to prove a refused request changed nothing."""

from __future__ import annotations

from core.models import ChangeLogEntry
from queues.models import Message, Queue, QueueTable


class Snapshot:
    """Counts of everything a write could touch, to prove a refused request changed nothing."""

    def __init__(self) -> None:
        self.values = self.take()

    @staticmethod
    def take() -> dict[str, object]:
        from queues.models import Agent, AgentUser, QueuePrivilege, Subscriber

        return {
            "queue_tables": sorted(QueueTable.objects.values_list("name", "comment")),
            "queues": sorted(
                Queue.objects.values_list(
                    "name",
                    "max_retries",
                    "retry_delay",
                    "retention_time",
                    "enqueue_enabled",
                    "dequeue_enabled",
                    "comment",
                )
            ),
            "messages": sorted(Message.objects.values_list("id", "queue_id", "state", "attempts")),
            "subscribers": sorted(Subscriber.objects.values_list("queue_id", "name")),
            "agents": sorted(Agent.objects.values_list("name", flat=True)),
            "agent_users": sorted(AgentUser.objects.values_list("agent_id", "user_id")),
            "privileges": sorted(
                QueuePrivilege.objects.values_list("queue_id", "user_id", "privilege")
            ),
            "changelog": ChangeLogEntry.objects.count(),
        }

    def assert_unchanged(self) -> None:
        assert self.take() == self.values
