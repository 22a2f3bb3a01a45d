"""The send gates: one ordered table of (gate, reason code, check), run before every send.

The order is fixed and is the order the issue names them (issue 7, "Send gates"): who may
be written to at all first, then whether a person said yes, then whether sending is on
(a dry run stops here), then the recipient, frequency and finally the text that would
leave. The first gate that refuses wins; its gate and reason are stored as a
`SuppressedSend`. Reason codes are defined once here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from django.conf import settings
from django.db.models import Q

from approvals.models import ApprovalRequest, EmailSend
from dunning import guards
from dunning.guards import guard_check
from ledger.models import Customer, Invoice
from paypilot.branding import logo_url_or_none
from paypilot.models import Tenant


@dataclass(frozen=True)
class SendContext:
    """Everything a gate may look at; built once per send attempt by the mailer."""

    approval: ApprovalRequest
    tenant: Tenant
    invoice: Invoice
    customer: Customer | None
    recipient: str
    subject: str  # as approved (edited or drafted)
    body: str  # as approved, before the link and the disclosure are added
    link: str  # PayPilot's own signed recovery link, minted for this send
    full_body: str  # exactly what would leave: body + link + disclosure
    now: datetime
    # The HTML part exactly as it would leave: the same guard reads its visible text, its
    # attributes and entities (dunning.guards.guard_check). None only for a text-only email.
    html_body: str | None = None


@dataclass(frozen=True)
class Gate:
    name: str
    reason: str  # reason code stored on the suppressed send
    check: Callable[[SendContext], bool]  # True means "passes"
    dry_run: bool = False  # a refusal here is recorded as a dry run, not a block


# --- checks -------------------------------------------------------------------------------

def _tenant_active(ctx: SendContext) -> bool:
    return ctx.tenant.is_active


def _invoice_open(ctx: SendContext) -> bool:
    return ctx.invoice.state in Invoice.OPEN_STATES


def _treatment_arm(ctx: SendContext) -> bool:
    return ctx.invoice.arm == Invoice.Arm.TREATMENT


def _approved(ctx: SendContext) -> bool:
    # "expired" is its own gate below; here only pending and rejected refuse.
    return ctx.approval.status in (ApprovalRequest.Status.APPROVED, ApprovalRequest.Status.EXPIRED)


def _approval_fresh(ctx: SendContext) -> bool:
    """An approval is good for one TTL window after the decision: a send retried days later
    goes out against a world the approver never saw."""
    approval = ctx.approval
    if approval.status == ApprovalRequest.Status.EXPIRED or approval.decided_at is None:
        return False
    ttl = timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS)
    return ctx.now <= approval.decided_at + ttl


def _sending_enabled(ctx: SendContext) -> bool:
    return bool(settings.PAYPILOT_SEND_EMAIL)


def _recipient_present(ctx: SendContext) -> bool:
    return bool(ctx.recipient)


def recipient_allowlisted(address: str, allowlist: list[str] | tuple[str, ...]) -> bool:
    """Empty list: nobody. `*`: everybody. `@example.com`: that domain. Else exact address
    (case-insensitive)."""
    address = address.strip().lower()
    domain = address.rpartition("@")[2]
    for entry in (e.strip().lower() for e in allowlist):
        if not entry:
            continue
        if entry == "*" or entry == address or (entry.startswith("@") and entry[1:] == domain):
            return True
    return False


def _recipient_allowlisted(ctx: SendContext) -> bool:
    return recipient_allowlisted(ctx.recipient, settings.PAYPILOT_ALLOWED_RECIPIENTS)


def _touches(ctx: SendContext) -> Q:
    # Real sends only: sent, delivered and bounced rows all reached a provider.
    return Q(status__in=EmailSend.TOUCH_STATUSES) & ~Q(approval=ctx.approval)


def _max_touches(ctx: SendContext) -> bool:
    count = EmailSend.objects.filter(_touches(ctx), invoice=ctx.invoice).count()
    return count < settings.PAYPILOT_MAX_TOUCHES


def _cooldown(ctx: SendContext) -> bool:
    """No real send to the same invoice or the same customer within the cooldown. Dry runs
    are suppressed sends, not `EmailSend` rows, so they never start one."""
    hours = settings.PAYPILOT_SEND_COOLDOWN_HOURS
    if hours <= 0:
        return True
    same = Q(invoice=ctx.invoice)
    if ctx.customer is not None:
        same |= Q(customer=ctx.customer)
    since = ctx.now - timedelta(hours=hours)
    return not EmailSend.objects.filter(_touches(ctx), same, sent_at__gte=since).exists()


def _final_verdict_has(ctx: SendContext, code: str) -> bool:
    # The final text, link and disclosure included: dunning's guard allows our own host
    # and strips allowed links before looking for secrets, so the signed token is not one.
    return code in _verdict(ctx).reasons


def _verdict(ctx: SendContext) -> guards.GuardVerdict:
    """The output guard over exactly what would leave; only the minted link may name our host."""
    # The allowlist is part of the key: the same text may be judged again under new settings.
    hosts = (tuple(settings.PAYPILOT_LINK_ALLOWED_HOSTS), settings.PAYPILOT_PUBLIC_BASE_URL)
    # The tenant's logo (validated: https, no tricks) is the one image the HTML part may load.
    logo = logo_url_or_none(ctx.tenant.logo_url) or ""
    return _verdict_of(ctx.subject, ctx.full_body, ctx.html_body, ctx.link, logo, hosts)


@lru_cache(maxsize=32)  # four gates read one verdict per send: compute it once
def _verdict_of(subject: str, full_body: str, html_body: str | None, link: str, logo: str,
                hosts: tuple[tuple[str, ...], str]) -> guards.GuardVerdict:
    return guard_check(subject=subject, body=full_body, html_body=html_body, minted=link,
                       images=(logo,))


def _link_schemes(ctx: SendContext) -> bool:
    """Only http(s) links: no `javascript:`, `data:`, `vbscript:`, `file:` or `//host`, in
    any spelling (entities, percent-escapes, controls inside the scheme)."""
    return not _final_verdict_has(ctx, guards.LINK_SCHEME_NOT_ALLOWED)


def _link_hosts(ctx: SendContext) -> bool:
    return not _final_verdict_has(ctx, guards.LINK_HOST_NOT_ALLOWED)


def _secret_text(ctx: SendContext) -> bool:
    return not _final_verdict_has(ctx, guards.SECRET_SHAPED_TOKEN)


def _output_guard(ctx: SendContext) -> bool:
    """Everything else the output guard refuses (card-like digits, leftover placeholders)."""
    return _verdict(ctx).ok


# --- the table ----------------------------------------------------------------------------

TENANT_INACTIVE = "tenant_inactive"
INVOICE_CLOSED = "invoice_closed"
HOLDOUT_ARM = "holdout_arm"
NOT_APPROVED = "not_approved"
APPROVAL_EXPIRED = "approval_expired"
SENDING_DISABLED = "sending_disabled"
NO_RECIPIENT = "no_recipient"
RECIPIENT_NOT_ALLOWLISTED = "recipient_not_allowlisted"
MAX_TOUCHES_REACHED = "max_touches_reached"
COOLDOWN_ACTIVE = "cooldown_active"
LINK_SCHEME_NOT_ALLOWED = "link_scheme_not_allowed"
LINK_HOST_NOT_ALLOWED = "link_host_not_allowed"
SECRET_SHAPED_TEXT = "secret_shaped_text"
OUTPUT_GUARD_REFUSED = "output_guard_refused"

SEND_GATES: tuple[Gate, ...] = (
    Gate("tenant_active", TENANT_INACTIVE, _tenant_active),
    Gate("invoice_open", INVOICE_CLOSED, _invoice_open),
    Gate("treatment_arm", HOLDOUT_ARM, _treatment_arm),
    Gate("approved", NOT_APPROVED, _approved),
    Gate("approval_fresh", APPROVAL_EXPIRED, _approval_fresh),
    Gate("sending_enabled", SENDING_DISABLED, _sending_enabled, dry_run=True),
    Gate("recipient_present", NO_RECIPIENT, _recipient_present),
    Gate("recipient_allowlisted", RECIPIENT_NOT_ALLOWLISTED, _recipient_allowlisted),
    Gate("max_touches", MAX_TOUCHES_REACHED, _max_touches),
    Gate("cooldown", COOLDOWN_ACTIVE, _cooldown),
    Gate("link_schemes", LINK_SCHEME_NOT_ALLOWED, _link_schemes),
    Gate("link_hosts", LINK_HOST_NOT_ALLOWED, _link_hosts),
    Gate("secret_text", SECRET_SHAPED_TEXT, _secret_text),
    Gate("output_guard", OUTPUT_GUARD_REFUSED, _output_guard),
)

# reason code -> gate: the map the refusal review uses to name each suppressed send's gate.
REASON_GATES: dict[str, str] = {gate.reason: gate.name for gate in SEND_GATES}


def gates_run(ctx: SendContext) -> Gate | None:
    """The first gate that refuses, or None when every gate passes."""
    for gate in SEND_GATES:
        if not gate.check(ctx):
            return gate
    return None
