"""`manage.py tokens issue|list|revoke`; `issue` prints the secret once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from paypilot.models import ApiToken, Role, Tenant
from paypilot.services import token_issue, token_revoke


class Command(BaseCommand):
    help = "Issue, list or revoke API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        issue = sub.add_parser("issue", help="issue a token (the secret is printed once)")
        issue.add_argument("--tenant", required=True)
        issue.add_argument("--role", required=True, choices=Role.values)
        issue.add_argument("--label", default="")
        listing = sub.add_parser("list", help="list tokens (never secrets)")
        listing.add_argument("--tenant")
        revoke = sub.add_parser("revoke", help="revoke a token by its prefix")
        revoke.add_argument("prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "issue":
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {options['tenant']!r}")
            issued = token_issue(tenant=tenant, role=options["role"], label=options["label"], actor="cli")
            self.stdout.write(f"token {issued.token.prefix} ({issued.token.role}) for {tenant.slug}")
            self.stdout.write("secret (shown once, store it now):")
            self.stdout.write(issued.plaintext)
        elif action == "list":
            tokens = ApiToken.objects.select_related("tenant").order_by("tenant__slug", "created_at")
            if options["tenant"]:
                tokens = tokens.filter(tenant__slug=options["tenant"])
            for t in tokens:
                state = "revoked" if t.revoked_at else "active"
                used = t.last_used_at.isoformat() if t.last_used_at else "never"
                self.stdout.write(f"{t.prefix}\t{t.tenant.slug}\t{t.role}\t{state}\tlast used {used}\t{t.label}")
        else:
            token = ApiToken.objects.select_related("tenant").filter(prefix=options["prefix"]).first()
            if token is None:
                raise CommandError(f"no token with prefix {options['prefix']!r}")
            changed = token_revoke(token=token, actor="cli")
            self.stdout.write(f"{token.prefix}: " + ("revoked" if changed else "already revoked"))
