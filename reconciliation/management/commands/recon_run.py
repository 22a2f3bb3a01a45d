"""`recon_run --tenant T --as-of DATE [--json]`: reconcile and store the review."""

from __future__ import annotations

import json
import sys
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from paypilot.money import format_minor
from reconciliation.management.commands._common import ACTOR, tenant_get
from reconciliation.services.runs import run_create


class Command(BaseCommand):
    help = "Match orders to captures and payouts to bank credits as of a date; store and print the review."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--as-of", required=True, type=date.fromisoformat)
        parser.add_argument("--json", action="store_true", help="print the stored JSON exactly (byte-identical)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_get(options["tenant"])
        from tqdm import tqdm

        steps = ["orders and captures", "fees", "payouts and bank", "disputes"]
        with tqdm(total=len(steps), desc="run", unit="step", file=sys.stderr, disable=None, leave=False) as bar:
            def progress(label: str) -> None:
                bar.set_postfix_str(label)
                bar.update(1)

            run, created = run_create(tenant=tenant, as_of=options["as_of"], actor=ACTOR, progress=progress)
        if options["json"]:
            self.stdout.write(run.result_json)
            return
        result = json.loads(run.result_json)
        rate = result["match_rate"]
        self.stdout.write(f"review as of {result['as_of']} (run {run.pk}, {'new' if created else 'unchanged inputs'}, "
                          f"inputs {run.input_digest[:12]})")
        self.stdout.write(f"orders {result['orders']}, match rate {'-' if rate is None else f'{rate:.2%}'}")
        for currency, amount in result["money_in_breaks_minor"].items():
            self.stdout.write(f"money in breaks: {format_minor(amount, currency)} {currency}")
        for b in result["breaks"]:
            self.stdout.write(f"  {b['kind']:<22} {format_minor(b['amount_minor'], b['currency']):>12} "
                              f"{b['currency']}  {b['explanation']}")
        for d in result["disputes_due"]:
            self.stdout.write(f"  dispute {d['dispute_id']} due {d['due_by']} ({d['days_left']} days left)")
        self.stdout.write("to do:")
        for item in result["todo"]:
            self.stdout.write(f"  - {item['action']} Approver: {item['approver']}.")
