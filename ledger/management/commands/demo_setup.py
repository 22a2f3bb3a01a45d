"""Create the demo tenant, its six customers, an `admin` superuser and a demo API token.

Idempotent: a second run creates nothing and prints no secret. Secrets (the admin password,
the token) are printed once, only when they are created, and are stored only as hashes.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from ledger.demo import demo_customers
from ledger.services import customer_upsert
from paypilot.models import ApiToken, Role, Tenant
from paypilot.services import tenant_create, token_issue
from paypilot.signals import demo_setup_done

ADMIN_USERNAME = "admin"
DEMO_TOKEN_LABEL = "demo-setup"


class Command(BaseCommand):
    help = "Create the demo tenant, its customers, an admin superuser and a demo API token (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        slug = settings.PAYPILOT_DEMO_TENANT
        with transaction.atomic():
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                tenant = tenant_create(slug=slug, name="PayPilot demo", actor="demo_setup")
                self.stdout.write(f"created tenant {slug}")
            else:
                self.stdout.write(f"tenant {slug} already exists")
            for customer in demo_customers():
                customer_upsert(
                    tenant=tenant, external_id=customer.external_id, name=customer.name,
                    email=customer.email, plan=customer.plan, mrr_minor=customer.mrr_minor,
                    currency=customer.currency, locale="en",
                    payment_history=customer.payment_history,
                )
            self.stdout.write(f"demo customers present: {tenant.customers.count()}")
            self._admin_user()
            self._demo_token(tenant)
        demo_setup_done.send(sender=self.__class__, stdout=self.stdout)

    def _admin_user(self) -> None:
        users = get_user_model()
        if users.objects.filter(username=ADMIN_USERNAME).exists():
            self.stdout.write(f"user {ADMIN_USERNAME} already exists (password unchanged)")
            return
        password = secrets.token_urlsafe(18)
        users.objects.create_superuser(username=ADMIN_USERNAME, email="", password=password)
        self.stdout.write(f"created superuser {ADMIN_USERNAME}; password (shown once): {password}")

    def _demo_token(self, tenant: Tenant) -> None:
        existing = ApiToken.objects.filter(
            tenant=tenant, label=DEMO_TOKEN_LABEL, role=Role.INTEGRATOR, revoked_at__isnull=True
        ).first()
        if existing is not None:
            self.stdout.write(f"demo token {existing.prefix} already exists (secret not shown again)")
            return
        issued = token_issue(tenant=tenant, role=Role.INTEGRATOR, label=DEMO_TOKEN_LABEL,
                             actor="demo_setup")
        self.stdout.write(f"created integrator token (shown once): {issued.plaintext}")
