"""`manage.py config_report [--format text|json]`: every environment variable the project
reads, where its effective value comes from, secrets masked."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from paypilot.config_surface import config_report_rows


class Command(BaseCommand):
    help = (
        "List every environment variable PayPilot reads with its source (environment, .env "
        "or default) and effective value; secrets and URL passwords are masked."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = config_report_rows()
        if options["format"] == "json":
            self.stdout.write(json.dumps([asdict(r) for r in rows], indent=2))
            return
        width = max(len(r.name) for r in rows)
        self.stdout.write(f"{'VARIABLE'.ljust(width)}  {'SOURCE':<11}  VALUE")
        for row in rows:
            self.stdout.write(f"{row.name.ljust(width)}  {row.source:<11}  {row.value}")
        overridden = sum(r.source != "default" for r in rows)
        self.stdout.write(f"{len(rows)} variables, {overridden} set, {len(rows) - overridden} at default")
