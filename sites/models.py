"""Sites and database links (spec/queues.md §2.1-2.4).

A site is a PostgreSQL database holding this project's schema. Its global name (Oracle's
GLOBAL_NAME) is the setting AQ_GLOBAL_NAME, copied by every migrate into the one row of
``aq_site`` so that another site's database link can read it with plain SQL. A database link is
how this site reaches another: connection, TLS, the encrypted password (core/crypto.py), and the
global name the remote gave when the link was created or last altered.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.validators import name_validator
from sites.choices import SslMode


class LocalSite(models.Model):
    """This database's own name, one row (id 1): written by sites.services.local_site_sync at
    every migrate, read by the database links of other sites."""

    id = models.SmallIntegerField(primary_key=True, default=1)
    global_name = models.CharField(max_length=255)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "aq_site"
        constraints = [models.CheckConstraint(condition=Q(id=1), name="aq_site_one_row")]

    def __str__(self) -> str:
        return self.global_name


class DatabaseLink(models.Model):
    """CREATE DATABASE LINK name CONNECT TO username IDENTIFIED BY password USING host:port/db.

    Its name shares one namespace with the gateway's messaging links: ``QUEUE@NAME`` names a
    remote queue through one or a foreign queue through the other, never both."""

    name = models.CharField(max_length=128, unique=True, validators=[name_validator])
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="database_links",
        help_text="Who created it; none shows as PUBLIC in DBA_DB_LINKS.",
    )
    host = models.CharField(max_length=255)
    port = models.IntegerField(default=5432)
    database = models.CharField(max_length=63)
    # The role at the remote site: its grants there (ENQUEUE on a secure queue) apply.
    username = models.CharField(max_length=63)
    password_encrypted = models.TextField(blank=True)
    sslmode = models.CharField(max_length=11, choices=SslMode.choices, default=SslMode.PREFER)
    sslrootcert = models.CharField(
        max_length=1024, blank=True, help_text="Root certificate file on this machine."
    )
    remote_global_name = models.CharField(
        max_length=255, help_text="The remote site's GLOBAL_NAME, read from it."
    )
    comment = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(port__gte=1, port__lte=65535), name="sites_dblink_port_range"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("sites:link", args=[self.pk])


# --- Oracle-named views (migration 0002; read-only) ----------------------------------------------


class DbaDbLink(models.Model):
    link_id = models.BigIntegerField(primary_key=True)
    owner = models.CharField(max_length=150)
    db_link = models.CharField(max_length=128)
    username = models.CharField(max_length=63)
    host = models.CharField(max_length=400)
    created = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "dba_db_links"
        ordering = ["db_link"]

    def __str__(self) -> str:
        return self.db_link


class AllDbLink(models.Model):
    """ALL_DB_LINKS: the links the requesting user may use, their own and the PUBLIC ones
    (the view holds every link; ``core.status`` filters it per user on ``owner_id``)."""

    link_id = models.BigIntegerField(primary_key=True)
    owner_id = models.IntegerField(null=True)
    owner = models.CharField(max_length=150)
    db_link = models.CharField(max_length=128)
    username = models.CharField(max_length=63)
    host = models.CharField(max_length=400)
    created = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "all_db_links"
        ordering = ["db_link"]

    def __str__(self) -> str:
        return self.db_link


class UserDbLink(models.Model):
    """USER_DB_LINKS: the links the requesting user owns (Oracle's PASSWORD column is left
    out: the password is never shown)."""

    link_id = models.BigIntegerField(primary_key=True)
    owner_id = models.IntegerField(null=True)
    db_link = models.CharField(max_length=128)
    username = models.CharField(max_length=63)
    host = models.CharField(max_length=400)
    created = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "user_db_links"
        ordering = ["db_link"]

    def __str__(self) -> str:
        return self.db_link


class GlobalName(models.Model):
    site_id = models.SmallIntegerField(primary_key=True)
    global_name = models.CharField(max_length=255)

    class Meta:
        managed = False
        db_table = "global_name"

    def __str__(self) -> str:
        return self.global_name
