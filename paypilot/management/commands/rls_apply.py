"""`manage.py rls_apply [--check] [--force]`: row-level security on every tenant table."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

from paypilot.rls import rls_apply, rls_problems, tenant_tables


class Command(BaseCommand):
    help = (
        "Install (idempotently) PostgreSQL row-level security on every table with a tenant "
        "foreign key. --check only reports and exits 1 when anything is missing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="report problems, change nothing")
        parser.add_argument("--force", action="store_true", help="re-create every policy")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"]
        if connections[using].vendor != "postgresql":
            self.stdout.write("row-level security applies to PostgreSQL only; nothing to do")
            return
        if options["check"]:
            problems = rls_problems(using=using)
            for problem in problems:
                self.stderr.write(problem)
            if problems:
                raise CommandError(f"{len(problems)} row-level security problem(s)")
            self.stdout.write(f"row-level security in place on {len(tenant_tables())} tenant tables")
            return
        changed = rls_apply(using=using, force=options["force"])
        self.stdout.write(
            f"row-level security: {len(changed)} table(s) updated, "
            f"{len(tenant_tables())} tenant tables in total"
        )
        for table in changed:
            self.stdout.write(f"  {table}")
