"""Recovery-link clicks: record `clicked`, then mint the destination at that moment.

The email carries only PayPilot's signed `/r/<token>`; what it leads to is decided on click
because billing-portal sessions live for minutes. Candidates, in order: a Stripe billing-
portal session (tenant has a restricted Stripe key and the invoice is Stripe's), the
invoice's hosted page, the tenant's own update page. Each must be https on a host in
PAYPILOT_LINK_ALLOWED_HOSTS; a candidate that is not is skipped (audited).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from integrations import stripe_api
from integrations.crypto import SecretUnreadable, secret_decrypt
from integrations.models import LinkSettings, Provider, ProviderCredential
from ledger.links import recovery_link_parse
from ledger.models import Invoice
from ledger.services import IllegalTransition, invoice_mark_clicked
from paypilot.services import audit_record
from paypilot.tenancy import tenant_context, tenant_for_row

REASON_LINK_INVALID = "link_invalid"  # forged, altered or expired token, or no such invoice
REASON_NO_DESTINATION = "no_destination"  # no candidate passed the allowlist


@dataclass(frozen=True)
class LinkFollow:
    destination: str  # "" when there is nowhere safe to send the customer
    reason: str = ""


def link_allowed(url: str) -> bool:
    """https, no user info, and a host named in PAYPILOT_LINK_ALLOWED_HOSTS (exact match)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    allowed = {h.strip().lower() for h in settings.PAYPILOT_LINK_ALLOWED_HOSTS if h.strip()}
    return (
        parts.scheme == "https"
        and not parts.username
        and not parts.password
        and (parts.hostname or "").lower() in allowed
    )


def recovery_link_follow(*, token: str) -> LinkFollow:
    """Resolve a clicked token: records the click, returns the destination or a reason."""
    invoice_pk = recovery_link_parse(token)
    if invoice_pk is None:
        return LinkFollow("", REASON_LINK_INVALID)
    tenant_id = tenant_for_row(Invoice, invoice_pk)
    if tenant_id is None:
        return LinkFollow("", REASON_LINK_INVALID)
    with tenant_context(tenant_id):
        invoice = Invoice.objects.select_related("tenant").filter(pk=invoice_pk).first()
        if invoice is None:
            return LinkFollow("", REASON_LINK_INVALID)
        try:
            invoice_mark_clicked(invoice=invoice, event_ref="recovery_link")
        except IllegalTransition:
            pass  # never messaged (e.g. a dry-run send): already audited by the ledger
        candidates = _candidates(invoice)
    # Minting happens outside the transaction: it may call Stripe.
    for source, produce in candidates:
        url = produce()
        if not url:
            continue
        if link_allowed(url):
            return LinkFollow(url)
        with tenant_context(invoice.tenant_id):  # row-level security: the audit row is the tenant's
            audit_record(event="integrations.link.refused", tenant=invoice.tenant,
                         detail={"invoice_id": invoice.pk, "source": source, "reason": "host_not_allowlisted"})
    return LinkFollow("", REASON_NO_DESTINATION)


def _candidates(invoice: Invoice) -> list[tuple[str, Callable[[], str]]]:
    link = LinkSettings.objects.filter(tenant_id=invoice.tenant_id).first()
    update_url = link.update_url if link else ""
    found: list[tuple[str, Callable[[], str]]] = []
    api_key = _stripe_api_key(invoice)
    if api_key and invoice.provider_customer_id:
        return_url = invoice.hosted_invoice_url or update_url or settings.PAYPILOT_PUBLIC_BASE_URL

        def portal() -> str:
            try:
                return stripe_api.billing_portal_session_url(
                    api_key=api_key, customer=invoice.provider_customer_id, return_url=return_url
                )
            except stripe_api.StripeUnavailable:
                return ""

        found.append(("stripe_billing_portal", portal))
    found.append(("hosted_invoice_url", lambda: invoice.hosted_invoice_url))
    found.append(("tenant_update_url", lambda: update_url))
    return found


def _stripe_api_key(invoice: Invoice) -> str:
    if invoice.provider != Provider.STRIPE:
        return ""
    credential = ProviderCredential.objects.filter(tenant_id=invoice.tenant_id, provider=Provider.STRIPE).first()
    if credential is None:
        return ""
    try:
        return secret_decrypt(credential.api_key_encrypted)
    except SecretUnreadable:
        return ""
