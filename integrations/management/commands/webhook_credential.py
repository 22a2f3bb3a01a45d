"""Set a tenant's webhook credentials for one provider, reading secrets from environment
variables (never from the command line, where they would land in shell history)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from integrations.models import Provider
from integrations.services import credential_set
from paypilot.models import Tenant


class Command(BaseCommand):
    help = "Store (encrypted) a tenant's Stripe, Recharge or Chargebee webhook credentials."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--provider", required=True, choices=Provider.values)
        parser.add_argument("--secret-env", help="env variable holding the signing secret / client secret / password")
        parser.add_argument("--api-key-env", help="Stripe: env variable holding the restricted API key")
        parser.add_argument("--username", help="Chargebee: the Basic-auth user name")
        parser.add_argument("--currency", help="Recharge: the store currency for 2021-01 payloads")
        parser.add_argument("--rotate-url-key", action="store_true", help="Chargebee: issue a new URL segment")

    def _env(self, name: str | None) -> str | None:
        if not name:
            return None
        value = os.environ.get(name)
        if value is None:
            raise CommandError(f"environment variable {name} is not set")
        return value

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        change = credential_set(
            tenant=tenant, provider=options["provider"], secret=self._env(options["secret_env"]),
            api_key=self._env(options["api_key_env"]), username=options["username"],
            rotate_url_key=options["rotate_url_key"], default_currency=options["currency"],
            actor="command:webhook_credential",
        )
        base = settings.PAYPILOT_PUBLIC_BASE_URL.rstrip("/")
        path = f"/t/{tenant.slug}/webhooks/{options['provider']}"
        if change.url_key:
            path += f"/{change.url_key}"
            self.stdout.write("The Chargebee URL segment is shown once; store the URL in Chargebee now.")
        elif options["provider"] == Provider.CHARGEBEE:
            path += "/<url segment issued earlier>"
        self.stdout.write(f"webhook URL: {base}{path}")
