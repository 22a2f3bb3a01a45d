"""`manage.py gdpr_export --tenant T (--customer-id ID | --email E) [--output FILE]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from operations.gdpr import SubjectNotFound, subject_export, subject_find
from paypilot.models import Tenant


def add_subject_arguments(parser: CommandParser) -> None:
    parser.add_argument("--tenant", required=True, help="tenant slug")
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--customer-id", help="the customer's external id")
    who.add_argument("--email", help="the customer's e-mail address (case-insensitive)")


def find_subject(options: dict[str, Any]) -> Any:
    tenant = Tenant.objects.filter(slug=options["tenant"]).first()
    if tenant is None:
        raise CommandError(f"no tenant {options['tenant']!r}")
    try:
        return subject_find(tenant=tenant, customer_id=options["customer_id"], email=options["email"])
    except SubjectNotFound as exc:
        raise CommandError(str(exc)) from exc


class Command(BaseCommand):
    help = "Export every record about one data subject as JSON (access request). Audited."

    def add_arguments(self, parser: CommandParser) -> None:
        add_subject_arguments(parser)
        parser.add_argument("--output", help="write to this file (mode 600) instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        subject = find_subject(options)
        if options["output"]:
            path = Path(options["output"])
            path.touch(mode=0o600, exist_ok=True)
            with path.open("w", encoding="utf-8") as stream:  # written as read, a chunk at a time
                total = subject_export(subject=subject, stream=stream, actor="command:gdpr_export")
            self.stderr.write(f"{total} records written to {path}")
        else:
            subject_export(subject=subject, stream=self.stdout, actor="command:gdpr_export")
