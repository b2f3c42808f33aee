from django.db import models


class InstanceStatus(models.TextChoices):
    UP = "UP", "Up"
    DOWN = "DOWN", "Down"
