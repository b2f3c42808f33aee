from django.db import models


class Role(models.TextChoices):
    """The three console roles, each a Django group created by a migration."""

    ADMINISTRATOR = "administrator", "Administrator"
    OPERATOR = "operator", "Operator"
    MONITOR = "monitor", "Monitor"


class Capability(models.TextChoices):
    """What a request wants to do; each role is granted a set of these."""

    VIEW = "view", "View"
    OPERATE = "operate", "Operate (start, stop, enqueue, dequeue, purge, replay)"
    CONFIGURE = "configure", "Change the topology"


class ChangeAction(models.TextChoices):
    CREATE = "create", "Create"
    UPDATE = "update", "Update"
    DELETE = "delete", "Delete"
    ACTION = "action", "Operator action"
