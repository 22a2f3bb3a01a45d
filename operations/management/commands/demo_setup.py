"""Create the demo tenant, its six customers, an `admin` superuser and a demo API token, give
the tenant webhook secrets, play a short story of signed Stripe deliveries (so drafts wait in
the console) and write past weeks of history in both arms (so the report has numbers).

Idempotent: a second run creates nothing and prints no secret. Secrets (the admin password,
the token) are printed once, only when they are created, and are stored only as hashes.
It lives in `operations` because it drives every app: ledger, integrations, dunning, approvals.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from integrations.demo import demo_credentials_ensure, demo_story
from ledger.demo import demo_customers, demo_history_write
from ledger.services import customer_upsert
from paypilot.models import ApiToken, Role, Tenant
from paypilot.services import tenant_create, token_issue
from paypilot.signals import demo_setup_done

ADMIN_USERNAME = "admin"
DEMO_TOKEN_LABEL = "demo-setup"
# The locale each demo customer is written to, so the story's drafts come in several languages.
DEMO_LOCALES = {"cust_002": "de", "cust_004": "es", "cust_005": "en", "cust_006": "fr"}


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
                    currency=customer.currency, locale=DEMO_LOCALES.get(customer.external_id, "en"),
                    payment_history=customer.payment_history,
                )
            self.stdout.write(f"demo customers present: {tenant.customers.count()}")
            self._admin_user()
            self._demo_token(tenant)
            for provider in demo_credentials_ensure(tenant=tenant):
                self.stdout.write(f"stored a {provider} webhook secret for {slug}")
            written = demo_history_write(tenant=tenant, now=timezone.now())
            self.stdout.write(f"demo history: {written} past invoices written" if written
                              else "demo history already present")
        # After the commit: the story goes through the webhook service, which opens its own
        # transactions and hands each event to the workers.
        customers = {c.external_id: (c.name, c.email) for c in tenant.customers.all()}
        received = demo_story(tenant=tenant, customers=customers)
        duplicates = sum(1 for _, receipt in received if receipt.status == 200 and receipt.body.get("duplicate"))
        refused = [f"{label} ({receipt.status})" for label, receipt in received if receipt.status != 200]
        self.stdout.write(f"demo story: {len(received) - duplicates - len(refused)} new signed deliveries, "
                          f"{duplicates} already received" + (f"; refused: {', '.join(refused)}" if refused else ""))
        # Apps add their own demo data through this signal (reconciliation: the `sample` tenant).
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
