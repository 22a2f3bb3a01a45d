"""List the dunning catalogue's locales: which are served and why any other is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dunning.catalogue import BASE_LOCALE, LOCALES_DIR, Catalogue, CatalogueError


class Command(BaseCommand):
    help = "Check every catalogue locale against English; list incomplete ones with reasons."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--directory", default=str(LOCALES_DIR), help="catalogue directory")
        parser.add_argument("--strict", action="store_true",
                            help="exit with status 1 when any locale is incomplete")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            cat = Catalogue.from_directory(Path(options["directory"]))
        except CatalogueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"served: {', '.join(cat.available_locales())}")
        english = cat.problems.get(BASE_LOCALE, [])
        for problem in english:
            self.stdout.write(f"en: {problem}")
        incomplete = cat.incomplete_locales()
        if not incomplete:
            self.stdout.write("incomplete: none")
        for locale, reasons in incomplete.items():
            shown = ", ".join(reasons[:10]) + (f" (+{len(reasons) - 10} more)" if len(reasons) > 10 else "")
            self.stdout.write(f"incomplete: {locale}: {len(reasons)} problem(s): {shown}")
        if options["strict"] and (incomplete or english):
            raise CommandError("catalogue has incomplete locales or style problems")
