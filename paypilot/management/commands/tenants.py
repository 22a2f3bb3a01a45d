"""`manage.py tenants create|list|suspend|resume [--draft-open]|deactivate`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from paypilot.models import Tenant
from paypilot.services import tenant_create, tenant_resume, tenant_set_status

_STATUS_FOR = {
    "suspend": Tenant.Status.SUSPENDED,
    "resume": Tenant.Status.ACTIVE,
    "deactivate": Tenant.Status.DEACTIVATED,
}


class Command(BaseCommand):
    help = "Create, list, suspend, resume or deactivate tenants."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a tenant")
        create.add_argument("slug")
        create.add_argument("--name", default="")
        sub.add_parser("list", help="list tenants")
        for action in _STATUS_FOR:
            command = sub.add_parser(action, help=f"{action} a tenant")
            command.add_argument("slug")
            if action == "resume":
                command.add_argument(
                    "--draft-open", action="store_true",
                    help="also draft the open treatment-arm failures recorded while suspended "
                         "(each still needs an approval before anything is sent)",
                )

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            if Tenant.objects.filter(slug=options["slug"]).exists():
                raise CommandError(f"tenant {options['slug']!r} already exists")
            tenant = tenant_create(slug=options["slug"], name=options["name"] or options["slug"],
                                   actor="cli")
            self.stdout.write(f"created tenant {tenant.slug} (id {tenant.pk})")
        elif action == "list":
            for tenant in Tenant.objects.order_by("slug"):
                self.stdout.write(f"{tenant.slug}\t{tenant.status}\t{tenant.name}")
        else:
            found = Tenant.objects.filter(slug=options["slug"]).first()
            if found is None:
                raise CommandError(f"no tenant {options['slug']!r}")
            tenant = found
            drafted: dict[str, int] = {}
            try:
                if action == "resume":
                    changed, drafted = tenant_resume(tenant=tenant, draft_open=options["draft_open"], actor="cli")
                else:
                    changed = tenant_set_status(tenant=tenant, status=_STATUS_FOR[action], actor="cli")
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"{tenant.slug}: {tenant.status}" + ("" if changed else " (unchanged)"))
            if options.get("draft_open"):
                self.stdout.write(f"drafts opened: {sum(drafted.values())}")
