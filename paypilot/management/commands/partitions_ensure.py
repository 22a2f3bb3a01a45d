"""`manage.py partitions_ensure [--months N]`: the coming month partitions (PostgreSQL)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

from paypilot.partitioning import DEFAULT_MONTHS_AHEAD, ensure_months


class Command(BaseCommand):
    help = (
        "Create the month partitions from this month to N months ahead on every table that "
        "paypilot.partitioning split by month (idempotent; run it monthly, e.g. from cron). "
        "Rows of such a month already in the DEFAULT partition move into the new one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--months", type=int, default=DEFAULT_MONTHS_AHEAD,
                            help=f"months ahead of the current one (default {DEFAULT_MONTHS_AHEAD})")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"]
        if connections[using].vendor != "postgresql":
            self.stdout.write("partitioning applies to PostgreSQL only; nothing to do")
            return
        created = ensure_months(max(0, options["months"]), using=using)
        self.stdout.write(f"partitions created: {len(created)}")
        for name in created:
            self.stdout.write(f"  {name}")
