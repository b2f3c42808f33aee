from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """The Messaging Gateway (DBMS_MGWADM): agents, links to foreign systems, foreign queues and
    MGW propagation jobs, run by agent processes that are Celery workers."""

    name = "gateway"
    verbose_name = "Messaging Gateway"

    def ready(self) -> None:
        from core.status import register
        from gateway.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
