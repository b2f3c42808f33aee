from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Propagations, schedules, gateway and Spark jobs: built in later issues."""

    name = "jobs"
    verbose_name = "Jobs"
