"""`recon_contract add --tenant T --currency USD --effective-from DATE --percent 2.9 --fixed 0.30
--chargeback-fee 15.00 --payout-delay-days 2`; `recon_contract list --tenant T`;
`recon_contract propose --tenant T --document FILE` (read and check the terms of a pricing
document); `recon_contract confirm --tenant T --proposal ID --effective-from DATE` (the yes);
`recon_contract eval [--json]` (score the extractor on the pricing-document corpus)."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from paypilot.tenancy import tenant_context
from reconciliation.evals.contract_eval import contract_eval_all, contract_eval_table
from reconciliation.management.commands._common import ACTOR, read_file, refused, tenant_get
from reconciliation.models import ContractVersion
from reconciliation.services.contracts import DELAY_UNITS, ContractRefused, contract_add
from reconciliation.services.proposals import contract_proposal_confirm, contract_proposal_create, proposal_as_dict


def _version_json(v: ContractVersion) -> dict[str, Any]:
    return {"currency": v.currency, "version": v.version, "effective_from": v.effective_from.isoformat(),
            "percent": str(v.percent), "fixed_minor": v.fixed_minor, "chargeback_fee_minor": v.chargeback_fee_minor,
            "payout_delay_days": v.payout_delay_days, "payout_delay_unit": v.payout_delay_unit,
            "payout_calendar": v.payout_calendar or None,
            **({"fx_margin_percent": str(v.fx_margin_percent)} if v.fx_margin_percent is not None else {})}


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
        add.add_argument("--payout-delay-unit", default="days", choices=DELAY_UNITS,
                         help="business_days for T+N and 'N business days'")
        add.add_argument("--payout-calendar", default="", help="whose banking days, e.g. US, TARGET, GB")
        add.add_argument("--international-surcharge", default=None, help="per cent; stored, not applied yet")
        add.add_argument("--rolling-reserve", default=None, help="per cent; stored, not applied yet")
        add.add_argument("--fx-margin", default=None,
                         help="per cent a foreign payout may lose to conversion before it is a break (default 1)")
        listing = sub.add_parser("list")
        listing.add_argument("--tenant", required=True)
        propose = sub.add_parser("propose", help="read the fee terms of a pricing document and check each one")
        propose.add_argument("--tenant", required=True)
        propose.add_argument("--document", required=True, help="text, Markdown, HTML or a text PDF")
        confirm = sub.add_parser("confirm", help="save a verified proposal as the next contract version")
        confirm.add_argument("--tenant", required=True)
        confirm.add_argument("--proposal", required=True, type=int)
        confirm.add_argument("--effective-from", required=True, type=date.fromisoformat)
        evaluate = sub.add_parser("eval", help="score the extractor on the pricing-document corpus "
                                               "(reconciliation/evals/contracts): a table per document, then totals")
        evaluate.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "eval":
            result = contract_eval_all()
            self.stdout.write(json.dumps(result, indent=2) if options["json"] else contract_eval_table(result))
            return
        tenant = tenant_get(options["tenant"])
        if options["action"] == "list":
            with tenant_context(tenant):
                versions = ContractVersion.objects.filter(tenant=tenant).order_by("currency", "version")
                self.stdout.write(json.dumps([_version_json(v) for v in versions], indent=2))
            return
        if options["action"] == "propose":
            self._propose(tenant, options["document"])
            return
        if options["action"] == "confirm":
            try:
                confirmed = contract_proposal_confirm(tenant=tenant, proposal_id=options["proposal"],
                                                      effective_from=options["effective_from"], actor=ACTOR)
            except ContractRefused as exc:
                raise refused(exc) from exc
            self.stdout.write(json.dumps({**_version_json(confirmed), "proposal": options["proposal"]}))
            return
        try:
            version = contract_add(
                tenant=tenant, currency=options["currency"], effective_from=options["effective_from"],
                percent=options["percent"], fixed=options["fixed"], chargeback_fee=options["chargeback_fee"],
                payout_delay_days=options["payout_delay_days"],
                international_surcharge=options["international_surcharge"],
                rolling_reserve=options["rolling_reserve"], fx_margin=options["fx_margin"], actor=ACTOR,
                payout_delay_unit=options["payout_delay_unit"], payout_calendar=options["payout_calendar"],
            )
        except ContractRefused as exc:
            raise refused(exc) from exc
        except ValueError as exc:  # pragma: no cover - argparse already typed the inputs
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(_version_json(version)))

    def _propose(self, tenant: Any, path: str) -> None:
        data = read_file(path, limit=settings.PAYPILOT_RECON_MAX_FILE_BYTES)
        try:
            proposal = contract_proposal_create(tenant=tenant, document=data, filename=path.rsplit("/", 1)[-1],
                                                actor=ACTOR)
        except ContractRefused as exc:
            raise refused(exc) from exc
        body = proposal_as_dict(proposal)
        self.stdout.write(json.dumps(body, indent=2, ensure_ascii=False))
        if not body["confirmable"]:
            failing = [f"{name}: {t['reason']}" for name, t in body["terms"].items() if not t["verified"]]
            self.stderr.write("not confirmable: " + "; ".join(failing))
        else:
            self.stderr.write(f"check the values, then: recon_contract confirm --tenant {tenant.slug} "
                              f"--proposal {proposal.pk} --effective-from YYYY-MM-DD")
