"""Refresh the card-network rules table in docs/decisions.md from the data (`--check` only compares)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisions.render import with_network_block

DOC_PATH = Path(settings.BASE_DIR) / "docs" / "decisions.md"


class Command(BaseCommand):
    help = "Render the network-rules block of docs/decisions.md from decisions/data/network_rules.csv."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="fail if the block differs, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        current = DOC_PATH.read_text(encoding="utf-8")
        try:
            text = with_network_block(current)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if options["check"]:
            if current != text:
                raise CommandError(f"{DOC_PATH} drifted from the network rules; run manage.py render_network_rules")
            self.stdout.write("up to date")
            return
        DOC_PATH.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {DOC_PATH}")
