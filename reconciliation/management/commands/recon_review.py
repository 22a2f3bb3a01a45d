"""`recon_review --tenant T [--as-of DATE] [--json] [--no-store]`: the morning payments review."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from reconciliation.management.commands._common import ACTOR, tenant_get
from reconciliation.services.review import morning_review


class Command(BaseCommand):
    help = ("The morning review: match rate, money in breaks, the biggest breaks explained, disputes due triaged "
            "and the to-do list (what only a person can approve). Reads the stored run of the current inputs; "
            "without one it stores a new run (--no-store: computes it and stores nothing).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--as-of", type=date.fromisoformat, default=None, help="YYYY-MM-DD (default: today, UTC)")
        parser.add_argument("--json", action="store_true", help="print the review as JSON")
        parser.add_argument("--no-store", action="store_true", help="never store a run (read only)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_get(options["tenant"])
        as_of = options["as_of"] or timezone.now().date()
        review = morning_review(tenant=tenant, as_of=as_of, store=not options["no_store"], actor=ACTOR)
        if options["json"]:
            self.stdout.write(json.dumps(review, sort_keys=True, ensure_ascii=False))
            return
        run = review["run"]
        self.stdout.write(f"Payments review as of {review['as_of']} "
                          f"({'run ' + str(run['id']) if run['stored'] else 'computed, not stored'})")
        for line in review["summary"]:
            self.stdout.write(f"  {line}")
        self.stdout.write("Biggest breaks:")
        for b in review["biggest_breaks"]:
            extra = f" [dispute {', '.join(b['related_disputes'])}]" if b["related_disputes"] else ""
            self.stdout.write(f"  {b['kind']:<22} {b['display']:>14}  {b['explanation']}{extra}")
        self.stdout.write("Disputes due:")
        for d in review["disputes_due"] or []:
            self.stdout.write(f"  {d['dispute_id']} {d['display']} {d['family']}, {d['days_left']} days left, "
                              f"win likelihood {d['win_likelihood']['level']}: {d['recommendation']['text']}")
            if d["same_story"]:
                self.stdout.write(f"    {d['same_story']}")
        if not review["disputes_due"]:
            self.stdout.write("  none")
        self.stdout.write("To do (nothing here moves money):")
        for item in review["todo"]:
            mark = "APPROVAL" if item["only_a_person_can_approve"] else "inquiry"
            self.stdout.write(f"  - [{mark}: {item['approver']}] {item['action']}")
        if review["todo_more"]:
            self.stdout.write(f"  ... and {review['todo_more']} more")
