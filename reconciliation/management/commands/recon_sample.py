"""`recon_sample [--into TENANT]`: load the sample books and their review (idempotent); JSON out."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from reconciliation.management.commands._common import ACTOR, tenant_get
from reconciliation.models import ImportFile
from reconciliation.services.sample import exports_load, sample_load


class Command(BaseCommand):
    help = ("Load the fictional sample (orders, Stripe, Adyen, PayPal and Braintree reports; camt.053, camt.054, "
            "BAI2 and CSV bank files) into the `sample` tenant, or with --into from its export files into an "
            "existing tenant, and store its review. Loading twice imports nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--into", default=None, help="an existing tenant to load the export files into")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["into"]:
            tenant = tenant_get(options["into"])
            run = exports_load(tenant=tenant, actor=ACTOR)
        else:
            tenant, run = sample_load(actor=ACTOR)
        formats = sorted(set(ImportFile.objects.filter(tenant=tenant).values_list("file_format", flat=True)))
        self.stdout.write(json.dumps({"tenant": tenant.slug, "run": run.pk, "as_of": run.as_of.isoformat(),
                                      "breaks": run.breaks_count, "formats": formats}))
