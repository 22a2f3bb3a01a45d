"""`recon_contract add --tenant T --currency USD --effective-from DATE --percent 2.9 --fixed 0.30
--chargeback-fee 15.00 --payout-delay-days 2`; `recon_contract list --tenant T`."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from paypilot.tenancy import tenant_context
from reconciliation.management.commands._common import ACTOR, refused, tenant_get
from reconciliation.models import ContractVersion
from reconciliation.services.contracts import ContractRefused, contract_add


def _version_json(v: ContractVersion) -> dict[str, Any]:
    return {"currency": v.currency, "version": v.version, "effective_from": v.effective_from.isoformat(),
            "percent": str(v.percent), "fixed_minor": v.fixed_minor, "chargeback_fee_minor": v.chargeback_fee_minor,
            "payout_delay_days": v.payout_delay_days}


class Command(BaseCommand):
    help = "Add a contract version (fees, chargeback fee, payout delay) or list them. Versions are never edited."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add")
        add.add_argument("--tenant", required=True)
        add.add_argument("--currency", required=True)
        add.add_argument("--effective-from", required=True, type=date.fromisoformat)
        add.add_argument("--percent", required=True, help="per cent of the amount, e.g. 2.9")
        add.add_argument("--fixed", required=True, help="fixed fee per capture in major units, e.g. 0.30")
        add.add_argument("--chargeback-fee", required=True, help="fee per dispute in major units")
        add.add_argument("--payout-delay-days", required=True, type=int)
        add.add_argument("--international-surcharge", default=None, help="per cent; stored, not applied yet")
        add.add_argument("--rolling-reserve", default=None, help="per cent; stored, not applied yet")
        listing = sub.add_parser("list")
        listing.add_argument("--tenant", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_get(options["tenant"])
        if options["action"] == "list":
            with tenant_context(tenant):
                versions = ContractVersion.objects.filter(tenant=tenant).order_by("currency", "version")
                self.stdout.write(json.dumps([_version_json(v) for v in versions], indent=2))
            return
        try:
            version = contract_add(
                tenant=tenant, currency=options["currency"], effective_from=options["effective_from"],
                percent=options["percent"], fixed=options["fixed"], chargeback_fee=options["chargeback_fee"],
                payout_delay_days=options["payout_delay_days"],
                international_surcharge=options["international_surcharge"],
                rolling_reserve=options["rolling_reserve"], actor=ACTOR,
            )
        except ContractRefused as exc:
            raise refused(exc) from exc
        except ValueError as exc:  # pragma: no cover - argparse already typed the inputs
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(_version_json(version)))
