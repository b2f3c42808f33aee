from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Propagations and their schedules; gateway and Spark jobs come in later issues."""

    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from core.status import register
        from jobs.status import STATUS_VIEWS

        register(*STATUS_VIEWS)

        from sites.hooks import register_link_users

        register_link_users("propagations", _propagations_using)


def _propagations_using(link) -> list[str]:  # type: ignore[no-untyped-def]
    """A remote propagation names its link: dropping the link is refused while one does."""
    from jobs.models import Propagation

    names = Propagation.objects.filter(destination_dblink=link.name).values_list("name", flat=True)
    return [f"propagation {n}" for n in names]
