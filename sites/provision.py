"""Running this project's ``manage.py`` as another site on this machine (its database, its
global name): how the demo and the benchmarks migrate and fill the second site they create."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings


def manage_at(
    database_url: str, global_name: str, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``manage.py *args`` in a subprocess whose database is ``database_url`` and whose
    AQ_GLOBAL_NAME is ``global_name``; the caller reads the return code and the output."""
    env = {k: v for k, v in os.environ.items() if k != "AQ_GLOBAL_NAME"}
    env.update(
        DATABASE_URL=database_url,
        AQ_GLOBAL_NAME=global_name,
        DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "console.settings"),
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=str(settings.BASE_DIR),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
