"""``python manage.py streamsadm SET_UP_QUEUE --queue_table T --queue_name Q --queue_user U``:
DBMS_STREAMS_ADM's queue procedure from the shell, through the same service as the page and API.

The procedure name is taken in any case, with or without ``DBMS_STREAMS_ADM.``; parameters are
Oracle's names (``--queue_table`` or ``--queue-table``), ``NULL`` is NULL. It prints one line
saying what was created and configured. A refused call prints an ORA-style message naming the
parameter on stderr and exits 1; bad usage exits 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.exceptions import Conflict, DomainError, Forbidden, NotFound
from queues import services

_ORA = {NotFound: 20002, Conflict: 20001, Forbidden: 20003}
_PARAMS = ("queue_table", "storage_clause", "queue_name", "queue_user", "comment")


class Command(BaseCommand):
    help = "Run DBMS_STREAMS_ADM.SET_UP_QUEUE: streamsadm SET_UP_QUEUE --queue_table … ."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("procedure", help="SET_UP_QUEUE")
        parser.add_argument("params", nargs=argparse.REMAINDER, help="--parameter value …")

    def _fail(self, message: str, code: int) -> None:
        if getattr(self, "_called_from_command_line", False):
            self.stderr.write(message)
            raise SystemExit(code)
        raise CommandError(message, returncode=code)

    def _parse(self, items: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        i = 0
        while i < len(items):
            flag = items[i]
            if not flag.startswith("--"):
                raise ValueError(f"Expected --parameter, got {flag!r}.")
            key, eq, value = flag[2:].partition("=")
            key = key.replace("-", "_").lower()
            if key not in _PARAMS:
                raise ValueError(f"Unknown parameter --{key}. Parameters: {', '.join(_PARAMS)}.")
            if not eq:
                i += 1
                if i >= len(items):
                    raise ValueError(f"--{key} needs a value.")
                value = items[i]
            out[key] = None if value.upper() == "NULL" else value
            i += 1
        return out

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["procedure"].strip().lower().removeprefix("dbms_streams_adm.")
        if name != "set_up_queue":
            self._fail(f"Unknown procedure {options['procedure']!r}. Procedures: set_up_queue.", 2)
            return
        try:
            kwargs = self._parse(list(options["params"] or []))
        except ValueError as exc:
            self._fail(f"SET_UP_QUEUE: {exc}", 2)
            return
        for key in ("queue_table", "queue_name"):
            if kwargs.get(key) is None:
                kwargs.pop(key, None)  # Oracle's defaults
        try:
            done = services.set_up_queue(user=None, **kwargs)
        except DomainError as exc:
            number = next((n for cls, n in _ORA.items() if isinstance(exc, cls)), 20000)
            where = "DBMS_STREAMS_ADM.SET_UP_QUEUE" + (f"({exc.field})" if exc.field else "")
            self._fail(f"ORA-{number}: {where}: {exc.message}", 1)
            return
        parts = [
            f"queue table {done.queue_table.name} "
            f"({'created' if done.queue_table_created else 'existing'}, "
            f"{done.queue_table.sort_order}, {done.queue_table.message_grouping})",
            f"queue {done.queue.name} ({'created' if done.queue_created else 'existing'})",
        ]
        if done.agent is not None:
            parts.append(
                f"agent {done.agent.name} ({'created' if done.agent_created else 'reused'}) "
                f"for user {kwargs['queue_user']} with ENQUEUE, DEQUEUE"
            )
        self.stdout.write("SET_UP_QUEUE: " + "; ".join(parts))
