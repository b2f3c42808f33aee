from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Propagations and their schedules; gateway and Spark jobs come in later issues."""

    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from core.status import register
        from jobs.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
