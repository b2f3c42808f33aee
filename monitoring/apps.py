from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """What operators watch from outside: /metrics for Prometheus, and the sampled message rates
    (a bounded time series the console and the API read)."""

    name = "monitoring"
    verbose_name = "Monitoring"

    def ready(self) -> None:
        from monitoring import access  # noqa: F401  (registers the allow-list's system check)
