"""`manage.py retention_purge [--dry-run]`: closed invoices past PAYPILOT_RETENTION_MONTHS
with their dependent rows, raw webhook bodies past PAYPILOT_WEBHOOK_BODY_DAYS."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from operations.retention import BATCH_SIZE, retention_purge


class Command(BaseCommand):
    help = (
        "Delete closed (recovered, churned, exhausted) invoices older than "
        "PAYPILOT_RETENTION_MONTHS with every dependent row, and empty raw webhook bodies "
        "older than PAYPILOT_WEBHOOK_BODY_DAYS. Open invoices are never purged. Works in "
        "batches, each its own transaction with an audit event and a progress line; re-run "
        "after an interrupt to continue. Run as the database owner; --dry-run changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                            help=f"old invoices (or payloads) per transaction (default {BATCH_SIZE})")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        # A line per committed batch: in a terminal, in cron's mail and in CI logs alike.
        result = retention_purge(dry_run=options["dry_run"], progress=self.stdout, actor="command:retention_purge",
                                 batch_size=options["batch_size"])
        verb = "would purge" if result.dry_run else "purged"
        if not result.counts:
            self.stdout.write(f"{verb}: nothing")
        for label, count in result.counts.items():
            self.stdout.write(f"{verb} {label}: {count}")
