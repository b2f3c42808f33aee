from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "queues"
    verbose_name = "Queues"

    def ready(self) -> None:
        from core.status import register
        from queues.buffer_config import apply_settings
        from queues.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
        apply_settings()  # also registers the Streams-pool system checks
