"""The Celery application; tasks live in each app's ``tasks.py``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

from console import broker

broker.install()

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _add_worker_steps() -> None:
    from jobs.worker import HeartbeatStep

    app.steps["worker"].add(HeartbeatStep)


_add_worker_steps()
