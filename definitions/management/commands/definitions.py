"""``manage.py definitions export|import``: the topology as a definitions document
(docs/DEFINITIONS.md). Runs as an internal caller (``user=None``), as the other commands do."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.exceptions import DomainError
from definitions.selectors import ENCRYPTED, OMITTED, definitions_export
from definitions.services import definitions_import


class Command(BaseCommand):
    help = "Export the topology as a definitions document, or import one (dry run first)."

    def add_arguments(self, parser: Any) -> None:
        sub = parser.add_subparsers(dest="verb", required=True)
        exp = sub.add_parser("export", help="Write the document to FILE ('-': standard output).")
        exp.add_argument("file", nargs="?", default="-")
        exp.add_argument(
            "--no-secrets", action="store_true", help="Leave passwords and encrypted options out."
        )
        imp = sub.add_parser("import", help="Read the document from FILE ('-': standard input).")
        imp.add_argument("file")
        imp.add_argument("--dry-run", action="store_true", help="Show the changes; apply nothing.")
        imp.add_argument(
            "--prune", action="store_true", help="Also delete what the document does not define."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verb"] == "export":
            doc = definitions_export(secrets=OMITTED if options["no_secrets"] else ENCRYPTED)
            text = json.dumps(doc, indent=2, sort_keys=False) + "\n"
            if options["file"] == "-":
                self.stdout.write(text, ending="")
            else:
                with open(options["file"], "w", encoding="utf-8") as f:
                    f.write(text)
                self.stderr.write(f"Exported to {options['file']}.")
            return
        try:
            if options["file"] == "-":
                document = json.load(sys.stdin)
            else:
                with open(options["file"], encoding="utf-8") as f:
                    document = json.load(f)
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"{options['file']}: {exc}") from exc
        try:
            plan = definitions_import(
                user=None, document=document, prune=options["prune"], dry_run=options["dry_run"]
            )
        except DomainError as exc:
            raise CommandError(f"{exc.field}: {exc.message}" if exc.field else exc.message) from exc
        for change in plan.changes:
            self.stdout.write(f"{change.action:6} {change.kind} {change.name}")
            for name, values in change.fields.items():
                self.stdout.write(f"         {name}: {values['from']!r} -> {values['to']!r}")
        summary = plan.as_dict()["summary"]
        counts = ", ".join(f"{n} to {a}" for a, n in summary.items())
        if plan.applied:
            self.stdout.write(self.style.SUCCESS(f"Imported: {counts}."))
        else:
            self.stdout.write(f"Dry run, nothing changed: {counts}.")
