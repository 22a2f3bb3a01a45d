"""Contract proposals: fee terms read from a pricing document, checked, then confirmed by a person.

`contract_proposal_create` reads the document (text, Markdown, HTML or a text PDF), asks the
chat model through the guarded LLM seam when one is switched on (else, or when the model's
answer is unusable, the deterministic extractor), and checks every value against the
document before anyone sees it (`reconciliation.verification`). Nothing becomes a contract
until `contract_proposal_confirm`: a person's yes, with an effective date, audited with who
said it. A proposal with any failing value cannot be confirmed at all (not even its verified
values): a partial contract would silently drop a term the document states.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from typing import Any

from django.conf import settings
from django.utils import timezone

from paypilot.models import Tenant
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context
from reconciliation.contract_llm import model_extract
from reconciliation.documents import document_text
from reconciliation.extraction import BUSINESS_DAYS, TERMS, Extraction, Term, business_calendar, terms_extract
from reconciliation.models import ContractProposal, ContractVersion
from reconciliation.services.contracts import ContractRefused, contract_add
from reconciliation.verification import terms_verify

# Reason codes of a refused proposal (beside the per-term reasons of `verification`).
PROPOSAL_NOT_FOUND = "proposal_not_found"  # no such proposal for this tenant
PROPOSAL_NOT_CONFIRMABLE = "proposal_not_confirmable"  # a value failed its check, or a term is missing
PROPOSAL_ALREADY_CONFIRMED = "proposal_already_confirmed"  # confirmed before: a new version needs a new proposal


def contract_proposal_create(*, tenant: Tenant, document: bytes, filename: str, actor: str) -> ContractProposal:
    """Read `document`, extract and check the fee terms, store them as a pending proposal.

    Audited (`reconciliation.contract.proposed`). Raises ContractRefused for a document that
    cannot be read (`file_too_large`, `unsupported_document`, `pdf_unreadable`, `empty_document`);
    nothing is stored then. Failing values do not raise: they are stored with their reasons."""
    limit = settings.PAYPILOT_RECON_MAX_FILE_BYTES
    if len(document) > limit:
        raise ContractRefused("file_too_large", f"the document has {len(document)} bytes; the limit is {limit}")
    doc_format, text = document_text(document, filename)
    # The model call holds no transaction open; it binds the tenant itself for its meter.
    extraction, llm_detail = model_extract(tenant=tenant, text=text)
    source = ContractProposal.Source.MODEL if extraction is not None else ContractProposal.Source.RULES
    if extraction is None:
        extraction = terms_extract(text)
    extraction = _with_calendar(extraction, text)
    checked = terms_verify(text=text, extraction=extraction)
    with tenant_context(tenant):
        proposal = ContractProposal.objects.create(
            tenant=tenant, filename=filename[:255], sha256=hashlib.sha256(document).hexdigest(),
            document_format=doc_format, document_text=text, source=source, currency=checked.currency,
            terms=checked.terms, confirmable=checked.confirmable, actor=actor,
        )
        audit_record(event="reconciliation.contract.proposed", tenant=tenant, actor=actor, detail={
            "recon_proposal": proposal.pk, "sha256": proposal.sha256, "source": source,
            "currency": checked.currency, "count": checked.verified_count, "status": proposal.status,
            **llm_detail,
        })
    return proposal


def contract_proposal_confirm(*, tenant: Tenant, proposal_id: int, effective_from: datetime.date,
                              actor: str) -> ContractVersion:
    """A person's yes: the proposal's values become the tenant's next contract version from
    `effective_from`. Every quote is checked again against the stored document first.

    Audited (`reconciliation.contract.confirmed`, naming the proposal, the version and who
    confirmed) in the same transaction as the version. Raises ContractRefused:
    `proposal_not_found` (also for another tenant's proposal), `proposal_already_confirmed`,
    `proposal_not_confirmable` (any failing or missing value)."""
    with tenant_context(tenant):  # one transaction: the version, the proposal and the audit row
        proposal = (ContractProposal.objects.select_for_update()
                    .filter(tenant=tenant, pk=proposal_id).first())
        if proposal is None:
            raise ContractRefused(PROPOSAL_NOT_FOUND, f"no contract proposal {proposal_id}")
        if proposal.status == ContractProposal.Status.CONFIRMED:
            raise ContractRefused(PROPOSAL_ALREADY_CONFIRMED,
                                  f"proposal {proposal.pk} was confirmed as version {proposal.contract_version_id}")
        rechecked = terms_verify(text=proposal.document_text, extraction=_as_extraction(proposal))
        if not rechecked.confirmable:
            failing = ", ".join(f"{name}: {check['reason']}" for name, check in rechecked.terms.items()
                                if not check["verified"] and check["reason_code"] != "term_absent")
            raise ContractRefused(PROPOSAL_NOT_CONFIRMABLE,
                                  f"proposal {proposal.pk} has values that failed their checks ({failing})")
        terms = rechecked.terms
        version = contract_add(
            tenant=tenant, currency=rechecked.currency, effective_from=effective_from,
            percent=terms["percentage_fee"]["value"], fixed=terms["fixed_fee"]["value"],
            chargeback_fee=terms["chargeback_fee"]["value"],
            payout_delay_days=int(terms["payout_delay"]["value"]),
            international_surcharge=_optional(terms, "international_surcharge"),
            rolling_reserve=_optional(terms, "rolling_reserve"),
            payout_delay_unit=terms["payout_delay"]["unit"],
            payout_calendar=terms["payout_delay"].get("calendar") or "",
            rolling_reserve_days=_holding_days(terms),
            quotes={name: check["quote"] for name, check in terms.items() if check["verified"]},
            actor=actor,
        )
        proposal.status = ContractProposal.Status.CONFIRMED
        proposal.contract_version = version
        proposal.confirmed_by = actor
        proposal.confirmed_at = timezone.now()
        proposal.save(update_fields=["status", "contract_version", "confirmed_by", "confirmed_at"])
        audit_record(event="reconciliation.contract.confirmed", tenant=tenant, actor=actor, detail={
            "recon_proposal": proposal.pk, "version": version.version, "currency": version.currency,
            "effective_from": effective_from.isoformat(), "state": proposal.status,
        })
    return version


def proposal_as_dict(proposal: ContractProposal) -> dict[str, Any]:
    """The proposal as JSON-ready data (the MCP tools and the command print it; keep it stable):
    `id, status, filename, source, currency, confirmable, contract_version` and `terms`, one
    entry per term in TERMS order, each `value` (decimal string, or null), `unit`, `quote`,
    `verified`, `reason` (null when verified), `reason_code` and `detail` (what a unit error
    or a currency refusal was about, else null)."""
    return {
        "id": proposal.pk,
        "status": proposal.status,
        "filename": proposal.filename,
        "source": proposal.source,
        "currency": proposal.currency or None,
        "confirmable": proposal.confirmable and proposal.status == ContractProposal.Status.PENDING,
        "contract_version": proposal.contract_version.label if proposal.contract_version is not None else None,
        "terms": {name: dict(proposal.terms[name]) for name in TERMS if name in proposal.terms},
    }


def _as_extraction(proposal: ContractProposal) -> Extraction:
    terms = {name: Term(value=t.get("value"), unit=t.get("unit"), quote=t.get("quote") or "",
                        holding_days=t.get("holding_days"), calendar=t.get("calendar"))
             for name, t in proposal.terms.items() if t.get("value") is not None or t.get("quote")}
    return Extraction(currency=proposal.currency or None, terms=terms)


def _optional(terms: dict[str, dict[str, Any]], name: str) -> str | None:
    check = terms.get(name)
    return check["value"] if check and check["verified"] else None



def _holding_days(terms: dict[str, dict[str, Any]]) -> int | None:
    check = terms.get("rolling_reserve")
    return int(check["holding_days"]) if check and check["verified"] and check.get("holding_days") else None


def _with_calendar(extraction: Extraction, text: str) -> Extraction:
    """A business-day delay the model read gets the document's banking calendar too."""
    delay = extraction.terms.get("payout_delay")
    if delay is None or delay.unit != BUSINESS_DAYS or delay.calendar:
        return extraction
    calendar = business_calendar(text, extraction.currency)
    terms = {**extraction.terms, "payout_delay": dataclasses.replace(delay, calendar=calendar)}
    return Extraction(currency=extraction.currency, terms=terms)
