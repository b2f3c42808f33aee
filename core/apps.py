from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Foundation shared by every app: roles, the change log, API and view plumbing."""

    name = "core"
    verbose_name = "Core"
