from django.conf import settings
from django.db import models

from core.choices import ChangeAction


class ChangeLogEntry(models.Model):
    """One create, update or delete of a topology object, or one operator action."""

    time = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=16, choices=ChangeAction.choices)
    verb = models.CharField(max_length=64, help_text="Service verb, for example queue_purge.")
    object_type = models.CharField(max_length=64, db_index=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-time", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%d %H:%M:%S} {self.username} {self.verb} {self.object_repr}"

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("core:changelog_detail", args=[self.pk])
