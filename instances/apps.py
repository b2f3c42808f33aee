from django.apps import AppConfig


class InstancesConfig(AppConfig):
    """Instances: the nodes of the processing tier (hosts running Celery workers under one
    ``AQ_INSTANCE_NAME``), known only by their workers' heartbeats; the RAC instances of
    GV$INSTANCE. The queues app decides which instance owns each queue table."""

    name = "instances"
    verbose_name = "Instances"

    def ready(self) -> None:
        from core.status import register
        from instances.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
