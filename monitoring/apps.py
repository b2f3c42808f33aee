from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """What operators watch from outside: /metrics for Prometheus, and the sampled message rates
    (a bounded time series the console and the API read)."""

    name = "monitoring"
    verbose_name = "Monitoring"

    def ready(self) -> None:
        from monitoring import checks  # noqa: F401  (registers the settings' system checks)
