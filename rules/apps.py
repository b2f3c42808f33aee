from django.apps import AppConfig


class RulesConfig(AppConfig):
    """Condition language, rule sets and generators: built in the rules-engine issue."""

    name = "rules"
    verbose_name = "Rules"

    def ready(self) -> None:
        from core.status import register
        from rules.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
