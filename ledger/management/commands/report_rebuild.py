"""`manage.py report_rebuild [--tenant T]`: recompute the report rollup from the invoice rows."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from ledger.rollup import rollup_rebuild
from paypilot.models import Tenant
from paypilot.tenancy import tenant_context


class Command(BaseCommand):
    help = (
        "Recompute the recovery report's rollup (ledger_reportrollup) from the invoice rows, "
        "one tenant per transaction: after a restore, a repair or a migration. Safe to re-run; "
        "with no invoices stored it stores nothing. The triggers keep the rollup exact "
        "otherwise, so this is never needed in normal operation."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="slug of one tenant (default: every tenant)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"no tenant with slug {options['tenant']!r}")
        chosen = list(tenants)
        rows = 0
        # The bar goes to the real stderr, and only when that is a terminal (not cron, not CI).
        for tenant in tqdm(chosen, disable=not sys.stderr.isatty(), file=sys.stderr, unit="tenant",
                           desc="report_rebuild"):
            with tenant_context(tenant):
                rows += rollup_rebuild(tenant_id=tenant.pk)
        self.stdout.write(f"report_rebuild: {len(chosen)} tenant(s), {rows} rollup row(s) stored")
