"""Replay a tenant's stored decisions through a candidate rule version; writes nothing."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisions.models import RuleVersion
from decisions.selectors import rule_table_for_version
from decisions.shadow import MAX_DAYS, shadow_replay
from decisions.versions import GuardRailError
from paypilot.models import Tenant


class Command(BaseCommand):
    help = "Shadow replay: what candidate version V would have decided for tenant T over the last N days."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--candidate", required=True, type=int,
                            help="the tenant's version number (1, 2, ...) or its id with --by-id")
        parser.add_argument("--by-id", action="store_true", help="--candidate is the RuleVersion id")
        parser.add_argument("--days", type=int, default=30, help=f"window in days, 1 to {MAX_DAYS} (default 30)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"unknown tenant: {options['tenant']}")
        lookup = {"pk": options["candidate"]} if options["by_id"] else {"number": options["candidate"]}
        version = RuleVersion.objects.filter(tenant=tenant, **lookup).prefetch_related("rows").first()
        if version is None:
            raise CommandError(f"tenant {tenant.slug} has no rule version {options['candidate']}")
        try:
            table = rule_table_for_version(version=version)
            report = shadow_replay(tenant=tenant, candidate=table, days=options["days"],
                                   progress=not options["no_progress"] and not options["json"])
        except (GuardRailError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        data = report.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
            return
        self.stdout.write(f"tenant {tenant.slug}, candidate v{version.number} ({table.digest}), "
                          f"last {report.days} days: {report.decisions} decisions, {report.changed} would change")
        self.stdout.write(f"  retries forbidden {report.retries_forbidden}, added {report.retries_added}; "
                          f"wait shorter {report.wait_shorter}, longer {report.wait_longer}; "
                          f"drafts written {report.drafts_written}, would not be written "
                          f"{report.drafts_not_written}, would be added {report.drafts_added}")
        money = data["money"]["by_currency"]
        if not money:
            self.stdout.write("  money in changed decisions: none")
        for currency, m in money.items():  # one line per currency: never added across currencies
            self.stdout.write(f"  money in changed decisions, {currency}: {m['decisions']} decisions, expected "
                              f"recovered {m['expected_recovered_minor']}, annual value at risk "
                              f"{m['annual_value_at_risk_minor']} (minor units)")
        for code, summary in data["by_failure_code"].items():
            self.stdout.write(f"  {code}: {summary['decisions']} decisions, {summary['changed']} change")
            for step in summary["transitions"]:
                a, b = step["from"], step["to"]
                self.stdout.write(f"    {step['decisions']}: {a['action']}/{a['retry_in_days']}d/"
                                  f"{'retry' if a['retry'] else 'no retry'} -> {b['action']}/{b['retry_in_days']}d/"
                                  f"{'retry' if b['retry'] else 'no retry'}")
