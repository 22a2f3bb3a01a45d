"""Write docs/ach-return-decisions.md from the ACH table (`--check` only compares)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisions.render import ach_markdown

DOC_PATH = Path(settings.BASE_DIR) / "docs" / "ach-return-decisions.md"


class Command(BaseCommand):
    help = "Render docs/ach-return-decisions.md from the ACH decision table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="fail if the file differs, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        text = ach_markdown()
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        if options["check"]:
            if current != text:
                raise CommandError(f"{DOC_PATH} drifted from the table; run manage.py render_ach_docs")
            self.stdout.write("up to date")
            return
        DOC_PATH.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {DOC_PATH}")
