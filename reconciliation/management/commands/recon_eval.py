"""`recon_eval`: run the eval set (reconciliation/evals/cases) and print the score as JSON."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from reconciliation.evals.runner import eval_run_all


class Command(BaseCommand):
    help = "Score the matching rules on the eval set of cases that catch people out (writes nothing)."

    def handle(self, *args: Any, **options: Any) -> None:
        report = eval_run_all()
        self.stdout.write(json.dumps(report, indent=2))
        if report["passed"] != report["total"]:
            raise CommandError(f"{report['total'] - report['passed']} eval case(s) failed")
