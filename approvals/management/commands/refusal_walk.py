"""manage.py refusal_walk: watch every refusal gate fire on invented cases (rolled back)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals.walk import refusal_walk_run


class Command(BaseCommand):
    help = (
        "Send invented cases through the real code paths (a refused /decide body, a "
        "fall-through, an allowlist refusal, an output-guard refusal, a guard-swapped draft, "
        "an expired approval) plus two controls (a matched decision, a clean approved send), "
        "print what each did and what the refusal view shows, and fail if an expected "
        "refusal is missing or a control appears. Everything is rolled back; no email leaves."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="also print the refusal view as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        report = refusal_walk_run()
        for case in report.cases:
            kind = "expect" if case.expected else "control"
            seen = "appears" if case.appeared else "absent"
            verdict = "ok" if case.ok else "FAIL"
            self.stdout.write(f"{verdict:4} {kind:7} {case.name:34} {case.did:40} {case.source}: {seen}")
        self.stdout.write("sources: " + ", ".join(
            f"{name}={info['status']}({info['count']})" for name, info in report.view["sources"].items()
        ))
        if options["json"]:
            self.stdout.write(json.dumps(report.view, indent=2))
        failed = [case.name for case in report.cases if not case.ok]
        if failed:
            raise CommandError("refusal walk failed: " + "; ".join(failed))
        self.stdout.write(self.style.SUCCESS(f"refusal walk: all {len(report.cases)} cases behaved"))
