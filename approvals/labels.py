"""Words for the codes a finance person meets in the console: one table per kind of code,
and `label()` / `code_html()` that show the words with the code in a tooltip.

Presentation only: the codes stay the stored values and the public contract; a code
missing from a table (a gate added later) is shown as its words with underscores removed,
never hidden.
"""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

FAILURE_REASONS: dict[str, str] = {
    "card_expired": "Card expired",
    "insufficient_funds": "Not enough funds",
    "generic_decline": "Declined, no reason given",
    "issuer_do_not_retry": "Bank blocks this card",
    "card_details_invalid": "Card details wrong",
    "direct_debit_not_retried": "Direct debit failed, not retried",
    "retries_exhausted": "Provider stopped retrying",
    "default": "Other decline",
}

ACTIONS: dict[str, str] = {
    "request_card_update": "Ask for a card update",
    "wait_and_retry": "Wait, then retry",
    "request_new_payment_method": "Ask for another payment method",
    "request_manual_payment": "Ask for a manual payment",
    "retry_and_verify": "Retry once, suggest checking with the bank",
}

RISKS: dict[str, str] = {"low": "Low", "medium": "Medium", "high": "High"}

APPROVAL_STATUSES: dict[str, str] = {
    "pending": "Waiting for approval",
    "approved": "Approved",
    "rejected": "Rejected",
    "expired": "Expired unapproved",
    "withdrawn": "Withdrawn",
}

INVOICE_STATES: dict[str, str] = {
    "failed": "Unpaid",
    "messaged": "Unpaid, emailed",
    "clicked": "Unpaid, link opened",
    "recovered": "Paid",
    "churned": "Cancelled",
    "exhausted": "Retries exhausted",
    "voided": "Voided",
}

WITHDRAWN_REASONS: dict[str, str] = {
    "invoice_paid": "Invoice paid",
    "invoice_cancelled": "Subscription cancelled",
    "invoice_exhausted": "Provider stopped retrying",
    "invoice_voided": "Invoice voided",
    "superseded": "Replaced by a newer draft",
    "approval_withdrawn": "Withdrawn",
}

# Send gates and the reason codes they refuse with (approvals.gates), plus the other
# refusal sources of the refusal review.
GATES: dict[str, str] = {
    "tenant_active": "Tenant active", "invoice_open": "Invoice still open", "treatment_arm": "Not in the holdout",
    "approved": "Approved", "approval_fresh": "Approval not expired", "sending_enabled": "Sending switched on",
    "recipient_present": "Has an email address", "recipient_allowlisted": "Recipient allowed",
    "max_touches": "Email limit per invoice", "cooldown": "Pause between emails",
    "link_schemes": "Link type allowed", "link_hosts": "Link address allowed", "secret_text": "No secrets in text",
    "output_guard": "Copy passes the guard", "rules_table": "Rules table", "delivery": "Delivery",
}

REASONS: dict[str, str] = {
    "tenant_inactive": "Tenant suspended",
    "invoice_closed": "Invoice already closed",
    "holdout_arm": "Invoice is in the holdout",
    "not_approved": "Not approved",
    "approval_expired": "Approval expired",
    "sending_disabled": "Sending is off (dry run)",
    "no_recipient": "No email address",
    "recipient_not_allowlisted": "Recipient not on the allowlist",
    "max_touches_reached": "Email limit reached",
    "cooldown_active": "Emailed too recently",
    "link_scheme_not_allowed": "Link type not allowed",
    "link_host_not_allowed": "Link address not allowed",
    "secret_shaped_text": "Text looks like a secret",
    "output_guard_refused": "Copy refused by the guard",
    "fell_through": "No rule for this decline: default used",
    "guard_swapped": "Model copy replaced by the template",
    "unclassified": "Unclassified",
    "sender_died": "Sender stopped before handing over",
    "sender_died_after_handoff": "Sender stopped after handing over",
    "sender_died_again": "Retry stopped too",
    "sender_died_unmarked": "Sender stopped (no hand-off marker)",
    **WITHDRAWN_REASONS,
}

REFUSAL_SOURCES: dict[str, str] = {
    "decision_refusals": "Decision requests refused",
    "suppressed_sends": "Sends stopped by a gate",
    "decision_fall_throughs": "Declines with no matching rule",
    "guard_swaps": "Model copy replaced",
    "delivery_unknown": "Delivery unknown",
}


# dunning.slots reason codes: why a customer, plan or company value was left out of the copy.
DROPPED_FIELDS: dict[str, str] = {"name": "Customer name", "plan": "Plan name", "business": "Company name"}
DROPPED_REASONS: dict[str, str] = {
    "too_long": "too long to be a name",
    "control_character": "hidden or control characters",
    "markup": "markup or template characters",
    "url_or_scheme": "looks like a link",
    "email_address": "an email address",
    "long_digits": "a long number",
    "instruction": "reads as an instruction",
    "secret_shaped": "looks like a key or token",
}


def words(code: str) -> str:
    """A code nobody wrote a label for, as words: `max_touches` -> "Max touches"."""
    text = code.replace("_", " ").strip()
    return text[:1].upper() + text[1:] if text else "-"


def label(table: dict[str, str], code: str | None) -> str:
    if not code:
        return "-"
    return table.get(code) or words(code)


def code_html(table: dict[str, str], code: str | None) -> SafeString:
    """The words, with the stored code in a tooltip (and a data attribute for tests)."""
    if not code:
        return format_html("{}", "-")
    return format_html('<span class="pp-code" title="{}" data-code="{}">{}</span>', code, code, label(table, code))


def dropped_html(entries: list[dict[str, str]] | None) -> SafeString:
    """The review page's line for values the copy left out: "Customer name: looks like a link"."""
    parts = [format_html("{}: {}", label(DROPPED_FIELDS, str(e.get("field", ""))),
                         code_html(DROPPED_REASONS, str(e.get("reason", ""))))
             for e in (entries or []) if isinstance(e, dict)]
    return format_html_join("; ", "{}", ((p,) for p in parts)) if parts else format_html("{}", "")
