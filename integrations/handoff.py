"""The hand-off from a recorded failure to the recovery: dunning drafts, approvals opens.

One function, so the processing service has a single seam to the two apps below it in the
pipeline (CONTRACTS.md: `dunning.services.draft_for_invoice` then
`approvals.services.approval_open`). It runs inside the caller's transaction: if either
step raises, the ledger write before it rolls back too.
"""

from __future__ import annotations

from datetime import datetime

from approvals.services import approval_open
from dunning.services import draft_for_invoice
from ledger.models import Invoice

OUTCOME_DRAFT_OPENED = "draft_opened"  # a Draft exists and an approval request is open


def recovery_start(
    *, invoice: Invoice, provider_retry_at: datetime | None, provider_retry_source: str
) -> str:
    """Draft the dunning email for a treated invoice and open its approval request.

    Returns the outcome code. Raises whatever dunning or approvals raise (the caller's
    transaction then rolls back and the event is retried).
    """
    draft = draft_for_invoice(
        invoice=invoice,
        provider_retry_at=provider_retry_at,
        provider_retry_source=provider_retry_source,
    )
    approval_open(draft=draft)
    return OUTCOME_DRAFT_OPENED
