from django.apps import AppConfig


class SitesConfig(AppConfig):
    """Sites and database links: this database's global name and the links to other sites
    (databases migrated by this project) that remote propagations go through."""

    name = "sites"
    verbose_name = "Sites"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from core.status import register
        from sites.services import local_site_sync
        from sites.status import STATUS_VIEWS

        register(*STATUS_VIEWS)
        post_migrate.connect(local_site_sync, sender=self, dispatch_uid="aq_local_site_sync")
