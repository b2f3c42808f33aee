from django.apps import AppConfig


class DefinitionsConfig(AppConfig):
    """The whole topology as one JSON document: export, and import through every app's services."""

    name = "definitions"
    default_auto_field = "django.db.models.BigAutoField"
