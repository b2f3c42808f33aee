from django.apps import AppConfig


class QueuesConfig(AppConfig):
    name = "queues"
    verbose_name = "Queues"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from core.status import register
        from queues.buffer_config import apply_settings
        from queues.services import drop_orphan_storage
        from queues.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
        apply_settings()  # also registers the Streams-pool system checks
        post_migrate.connect(
            drop_orphan_storage, sender=self, dispatch_uid="aq_drop_orphan_storage"
        )
