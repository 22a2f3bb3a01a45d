"""Evidence-pack drafts: what to gather for the dispute's reason, the facts the imported
rows already prove, and a timeline. A draft for a person to finish: nothing here submits
anything to a provider or a card network (`submitted: false` on every pack)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from paypilot.models import Tenant
from paypilot.tenancy import tenant_context
from reconciliation.engine import FINANCE
from reconciliation.services.disputes import (
    CREDIT_NOT_PROCESSED,
    DUPLICATE,
    FRAUDULENT,
    GENERAL,
    PRODUCT_NOT_RECEIVED,
    SUBSCRIPTION_CANCELLED,
    UNRECOGNISED,
    DisputeContext,
    context_for,
    dispute_triage,
)
from reconciliation.services.facts import money_of

# What to gather per reason family; the names in brackets are Stripe's evidence fields
# (docs.stripe.com/api/disputes/update `evidence`), so the person knows where each goes.
GATHER: dict[str, list[str]] = {
    FRAUDULENT: [
        "3-D Secure authentication result or AVS/CVC match for the payment",
        "the customer's IP address and device at purchase [customer_purchase_ip]",
        "proof of delivery to the cardholder's billing address [shipping_documentation]",
        "prior undisputed orders by the same customer [uncategorized_text]",
        "login or usage activity after the purchase (digital goods) [access_activity_log]",
    ],
    DUPLICATE: [
        "both charges with their dates and amounts, and why they are distinct purchases "
        "[duplicate_charge_explanation, duplicate_charge_id]",
        "the receipt or invoice of each charge [duplicate_charge_documentation, receipt]",
        "if one charge is a real duplicate: the refund instead of a fight (accept the dispute)",
    ],
    PRODUCT_NOT_RECEIVED: [
        "carrier, tracking number and delivery confirmation [shipping_carrier, shipping_tracking_number, "
        "shipping_documentation]",
        "shipping date and address [shipping_date, shipping_address]",
        "for services or digital goods: proof of access or use [service_date, access_activity_log]",
        "messages with the customer about the delivery [customer_communication]",
    ],
    SUBSCRIPTION_CANCELLED: [
        "the cancellation policy and how the customer accepted it [cancellation_policy, "
        "cancellation_policy_disclosure]",
        "proof the customer did not cancel before the charge, or used the service after it "
        "[cancellation_rebuttal, access_activity_log]",
        "the renewal notice sent before the charge [customer_communication]",
    ],
    CREDIT_NOT_PROCESSED: [
        "the refund already issued, with its date and amount, if any [receipt]",
        "the refund policy and how it was shown at checkout [refund_policy, refund_policy_disclosure]",
        "why no refund is owed (e.g. the goods were not returned) [refund_refusal_explanation]",
    ],
    UNRECOGNISED: [
        "the statement descriptor the customer saw and the order it belongs to [receipt, product_description]",
        "the customer's name, email and billing address on the order [customer_name, customer_email_address, "
        "billing_address]",
        "delivery or usage proof [shipping_documentation, access_activity_log]",
    ],
    GENERAL: [
        "the receipt and a description of what was sold [receipt, product_description]",
        "messages with the customer [customer_communication]",
        "the terms the customer accepted [refund_policy, cancellation_policy]",
    ],
}


def _when(value: datetime | date | None) -> str:
    if value is None:
        return ""
    return value.isoformat() if isinstance(value, date) and not isinstance(value, datetime) else value.isoformat()


def _facts_and_timeline(ctx: DisputeContext) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    facts: list[dict[str, Any]] = []
    timeline: list[dict[str, Any]] = []
    row = ctx.row
    order = ctx.order
    if order is not None:
        shown = money_of(order.amount_minor, order.currency)["display"]
        facts.append({"fact": "order", "text": f"Order {order.order_id} of {shown}"
                      f" placed {order.ordered_at:%Y-%m-%d}" + (f", status {order.status!r}" if order.status else ""),
                      "source": f"orders file, line {order.line}", **money_of(order.amount_minor, order.currency)})
        timeline.append({"at": order.ordered_at.isoformat(), "event": f"order {order.order_id} placed"})
    for capture in ctx.order_captures:
        disputed = ctx.charge is not None and capture.charge_id == ctx.charge.charge_id
        captured = money_of(capture.captured_minor, capture.currency)["display"]
        facts.append({"fact": "capture", "text": f"Capture {capture.transaction_id} (charge {capture.charge_id}) of "
                      f"{captured} on {capture.created_at:%Y-%m-%d}"
                      + (" — the disputed charge" if disputed else ""),
                      "source": "provider report", **money_of(capture.captured_minor, capture.currency)})
        timeline.append({"at": capture.created_at.isoformat(),
                         "event": f"captured {money_of(capture.captured_minor, capture.currency)['display']} "
                                  f"({capture.transaction_id})"})
        for refund in capture.refunds:
            back = money_of(refund["amount_minor"], capture.currency)["display"]
            facts.append({"fact": "refund", "text": f"Refund {refund['transaction_id']} of "
                          f"{back} on charge {capture.charge_id}"
                          f" on {refund['created_at']:%Y-%m-%d}", "source": "provider report",
                          **money_of(refund["amount_minor"], capture.currency)})
            timeline.append({"at": refund["created_at"].isoformat(),
                             "event": f"refunded {money_of(refund['amount_minor'], capture.currency)['display']} "
                                      f"({refund['transaction_id']})"})
        for debit in capture.dispute_debits:
            what = "dispute debit" if debit["type"] == "dispute" else "dispute reversal"
            timeline.append({"at": debit["created_at"].isoformat(),
                             "event": f"{what} {money_of(debit['amount_minor'], capture.currency)['display']} "
                                      f"(fee {money_of(debit['fee_minor'], capture.currency)['display']})"})
    dup = ctx.duplicate_of
    if dup is not None and ctx.charge is not None:
        facts.append({"fact": "duplicate_capture", "text": f"Order {ctx.order_id} was captured twice: "
                      f"{dup.transaction_id} and then {ctx.charge.transaction_id}; neither is refunded in full",
                      "source": "provider report"})
    timeline.append({"at": row.created_at.isoformat(), "event": f"dispute {row.dispute_id} opened ({row.reason})"})
    if row.evidence_due_by:
        timeline.append({"at": row.evidence_due_by.isoformat(), "event": "evidence due"})
    timeline.sort(key=lambda item: item["at"])
    return facts, timeline


def evidence_pack_draft(*, tenant: Tenant, dispute_id: str, as_of: date) -> dict[str, Any]:
    """The draft evidence pack of one dispute (with `markdown`). Reads only; submits
    nothing. Raises ReconLookupError (`dispute_not_found`)."""
    with tenant_context(tenant):
        ctx = context_for(tenant=tenant, dispute_id=dispute_id, as_of=as_of)
        triage = dispute_triage(tenant=tenant, dispute_id=dispute_id, as_of=as_of)
        facts, timeline = _facts_and_timeline(ctx)
    pack: dict[str, Any] = {
        "dispute_id": ctx.row.dispute_id, "as_of": as_of.isoformat(), "family": ctx.family,
        "reason": ctx.row.reason, "status": ctx.row.status, **money_of(ctx.row.amount_minor, ctx.row.currency),
        "evidence_due_by": triage["evidence_due_by"], "days_left": triage["days_left"],
        "to_gather": GATHER[ctx.family], "proven_facts": facts, "timeline": timeline,
        "not_in_the_data": _missing(ctx),
        "triage": {"win_likelihood": triage["win_likelihood"], "recommendation": triage["recommendation"],
                   "same_story": triage["same_story"]},
        "submitted": False, "requires_human_decision": True, "approver": FINANCE,
    }
    pack["markdown"] = _markdown(pack)
    return pack


def _missing(ctx: DisputeContext) -> list[str]:
    """What the pack needs and the imports cannot show."""
    out = []
    if ctx.charge is None:
        out.append(f"charge {ctx.row.charge_id or '(none)'} is not in the imported provider rows")
    if ctx.order is None:
        out.append("no imported order for the disputed charge")
    if ctx.family in (PRODUCT_NOT_RECEIVED, FRAUDULENT, UNRECOGNISED):
        out.append("delivery proof (tracking, carrier) is not in the exports")
    if ctx.family == FRAUDULENT:
        out.append("3-D Secure, AVS and CVC results are not in the exports")
    if ctx.family == SUBSCRIPTION_CANCELLED:
        out.append("the cancellation request (or its absence) is not in the exports")
    return out


def _md_escape(text: str) -> str:
    """Imported ids and words are data: no Markdown or HTML they contain becomes markup."""
    return "".join("\\" + ch if ch in "\\`*[]<>#|" else ch for ch in text)


def _markdown(pack: dict[str, Any]) -> str:
    e = _md_escape
    lines = [f"# Evidence pack (draft) for dispute {e(pack['dispute_id'])}", "",
             "_Draft for a person to review. Nothing has been submitted to the provider or the card network._", "",
             f"- Amount: {e(pack['display'])}", f"- Reason: {e(pack['reason'] or '(none)')} "
             f"(family: {e(pack['family'])})", f"- Status: {e(pack['status'] or '(unknown)')}",
             f"- Evidence due: {pack['evidence_due_by'] or 'unknown'}"
             + (f" ({pack['days_left']} days left as of {pack['as_of']})" if pack["days_left"] is not None else ""),
             f"- Win likelihood: {pack['triage']['win_likelihood']['level']} "
             f"(score {pack['triage']['win_likelihood']['score']} of 100, a points heuristic, not a model)",
             f"- Recommendation: {e(pack['triage']['recommendation']['text'])} "
             f"(approver: {pack['approver']})", ""]
    if pack["triage"]["same_story"]:
        lines += [f"> {e(pack['triage']['same_story'])}", ""]
    lines += ["## Why this likelihood", ""]
    reasons = pack["triage"]["win_likelihood"]["reasons"]
    lines += [f"- {r['points']:+d}: {e(r['why'])}" for r in reasons] or ["- (base score only)"]
    lines += ["", "## What the data already proves", ""]
    lines += [f"- {e(f['text'])} ({e(f['source'])})" for f in pack["proven_facts"]] or ["- nothing yet"]
    lines += ["", "## To gather", ""] + [f"- [ ] {e(item)}" for item in pack["to_gather"]]
    if pack["not_in_the_data"]:
        lines += ["", "## Not in the imported data", ""] + [f"- {e(item)}" for item in pack["not_in_the_data"]]
    lines += ["", "## Timeline", ""] + [f"- {t['at'][:10]}: {e(t['event'])}" for t in pack["timeline"]]
    return "\n".join(lines) + "\n"
