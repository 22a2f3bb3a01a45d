"""`manage.py gdpr_erase --tenant T (--customer-id ID | --email E) [--dry-run]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from operations.gdpr import subject_erase
from operations.management.commands.gdpr_export import add_subject_arguments, find_subject


class Command(BaseCommand):
    help = (
        "Erase one data subject's name, e-mail and free text everywhere; amounts and states "
        "stay (pseudonymised). Run as the database owner. --dry-run changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_subject_arguments(parser)
        parser.add_argument("--dry-run", action="store_true", help="report what would change")

    def handle(self, *args: Any, **options: Any) -> None:
        subject = find_subject(options)
        report = subject_erase(subject=subject, dry_run=options["dry_run"], actor="command:gdpr_erase")
        verb = "would change" if report.dry_run else "changed"
        self.stdout.write(f"subject {report.subject_hash}: {verb} {sum(report.changed.values())} rows")
        for label, count in report.changed.items():
            self.stdout.write(f"  {label}: {count}")
