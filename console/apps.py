from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """Settings, the Celery app, the page shell, dashboard and management commands."""

    name = "console"
    verbose_name = "Console"
