"""The hand-off from recorded failures to the recovery: dunning drafts, approvals opens.

One function, so the processing service has a single seam to the two apps below it in the
pipeline (CONTRACTS.md: `dunning.services.drafts_for_invoices` then
`approvals.services.approvals_open_many`). It runs inside the caller's transaction: if
either step raises, the ledger writes before it roll back too. What passes between the two
steps is plain values (`StoredDraft`, the requests' invoices), not model instances: the
drain writes these rows and never reads them back (issue 32).
"""

from __future__ import annotations

from approvals.services import approvals_open_many
from dunning.services import DraftRequest, drafts_for_invoices
from paypilot.models import Tenant

OUTCOME_DRAFT_OPENED = "draft_opened"  # a Draft exists and an approval request is open
# The tenant's rule version says "no email" for this failure code: decided, nothing drafted.
OUTCOME_NO_EMAIL = "decided_no_email"


def recovery_start(*, tenant: Tenant, requests: list[DraftRequest]) -> list[str]:
    """Draft the dunning email for each treated invoice and open its approval request.

    Returns one outcome code per request, in order. Raises whatever dunning or approvals
    raise (the caller's transaction then rolls back and the events are retried).
    """
    drafts = drafts_for_invoices(tenant=tenant, requests=requests)
    invoices = {request.invoice.pk: request.invoice for request in requests}
    approvals_open_many(drafts=[d for d in drafts if d is not None], invoices=invoices)
    return [OUTCOME_DRAFT_OPENED if d is not None else OUTCOME_NO_EMAIL for d in drafts]
