"""`manage.py retention_purge [--dry-run]`: closed invoices past PAYPILOT_RETENTION_MONTHS
with their dependent rows, raw webhook bodies past PAYPILOT_WEBHOOK_BODY_DAYS."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from operations.retention import retention_purge


class Command(BaseCommand):
    help = (
        "Delete closed (recovered, churned, exhausted) invoices older than "
        "PAYPILOT_RETENTION_MONTHS with every dependent row, and empty raw webhook bodies "
        "older than PAYPILOT_WEBHOOK_BODY_DAYS. Open invoices are never purged. One audit "
        "event with the counts. Run as the database owner; --dry-run changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        # The bar goes to the real stderr, and only when that is a terminal (not cron, not CI).
        result = retention_purge(dry_run=options["dry_run"], progress=sys.stderr, actor="command:retention_purge")
        verb = "would purge" if result.dry_run else "purged"
        self.stdout.write(
            f"retention: invoices closed before {result.invoice_cutoff:%Y-%m-%d}, "
            f"raw bodies received before {result.body_cutoff:%Y-%m-%d}"
        )
        if not result.counts:
            self.stdout.write(f"{verb}: nothing")
        for label, count in result.counts.items():
            self.stdout.write(f"{verb} {label}: {count}")
