"""The demo tenant's six customers (from `ledger/fixtures/demo_customers.csv`) and its
history: past weeks of invoices in both arms, written through the ledger's services.

That CSV is a verbatim copy of `shared/facts/demo_customers.csv` (invented companies with
invented payment histories); it is copied so the project runs without ../shared.
"""

from __future__ import annotations

import csv
import random
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from ledger.models import Invoice
from ledger.money import currency_normalise, to_minor
from ledger.services import (
    invoice_mark_churned,
    invoice_mark_clicked,
    invoice_mark_exhausted,
    invoice_mark_messaged,
    invoice_record_failure,
    invoice_record_payment,
)
from paypilot.models import Tenant

DEMO_CUSTOMERS_CSV = Path(__file__).resolve().parent / "fixtures" / "demo_customers.csv"
HISTORY_COLUMN = "payment_history(date status failure_code)"

_SINGLE = re.compile(r"^(\d{4}-\d{2}-\d{2}) (ok|failed)(?: (\w+))?$")
_RANGE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2}) (ok|failed) x(\d+)$")


@dataclass(frozen=True)
class DemoCustomer:
    external_id: str
    name: str
    email: str
    plan: str
    mrr_minor: int
    currency: str
    payment_history: list[dict[str, Any]]


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    return day.replace(year=day.year + month // 12, month=month % 12 + 1)


def payment_history_parse(text: str) -> list[dict[str, Any]]:
    """`2026-03-15 ok;2026-06-15 failed card_expired` -> entries, oldest first. A range
    `2026-02-20..2026-05-20 ok x4` expands to four monthly entries. Raises ValueError."""
    entries: list[dict[str, Any]] = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        if match := _SINGLE.match(part):
            entry: dict[str, Any] = {"date": match[1], "status": match[2]}
            if match[3]:
                entry["failure_code"] = match[3]
            entries.append(entry)
        elif match := _RANGE.match(part):
            start, end, count = date.fromisoformat(match[1]), date.fromisoformat(match[2]), int(match[4])
            days = [_add_months(start, i) for i in range(count)]
            if days[-1] != end:
                raise ValueError("history range does not step monthly to its end date")
            entries.extend({"date": d.isoformat(), "status": match[3]} for d in days)
        else:
            raise ValueError("unreadable payment history entry")
    return entries


def demo_customers(path: Path = DEMO_CUSTOMERS_CSV) -> list[DemoCustomer]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [
        DemoCustomer(
            external_id=row["id"],
            name=row["name"],
            email=row["email"],
            plan=row["plan"],
            mrr_minor=to_minor(row["mrr"], row["currency"]),
            currency=currency_normalise(row["currency"]),
            payment_history=payment_history_parse(row[HISTORY_COLUMN]),
        )
        for row in rows
    ]


# --- demo history: past weeks of invoices in both arms, for the report --------------------

DEMO_PROVIDER = "demo"  # every history invoice is labelled with this provider
HISTORY_WEEKS = 12
HISTORY_PER_WEEK = 30
# Invented probabilities, chosen to look like a plausible cohort; not measurements.
P_SELF_CURE = 0.22  # pays before any email would go out (the provider's own retries)
P_RECOVER_TREATED = 0.30  # recovers after the dunning email, among those not self-cured
P_RECOVER_HOLDOUT = 0.12  # recovers later without any email, among those not self-cured
P_MESSAGED = 0.9  # treatment invoices whose draft was approved and sent
FAILURE_CODES = ("insufficient_funds", "card_expired", "generic_decline", "do_not_honor", "processing_error")


def demo_history_write(*, tenant: Tenant, now: datetime, seed: int = 20260601) -> int:
    """Write `HISTORY_WEEKS` weeks of past failures through the ledger's services, with their
    sends, clicks and outcomes, labelled `provider="demo"`. Returns how many were written;
    0 when the tenant already has demo history (idempotent)."""
    if Invoice.objects.filter(tenant=tenant, provider=DEMO_PROVIDER).exists():
        return 0
    customers = list(tenant.customers.order_by("external_id"))
    rng = random.Random(seed)
    written = 0
    for number in range(HISTORY_WEEKS * HISTORY_PER_WEEK):
        customer = customers[number % len(customers)] if customers else None
        failed_at = now - timedelta(days=rng.uniform(1, HISTORY_WEEKS * 7))
        amount = customer.mrr_minor if customer and customer.mrr_minor else rng.choice((2900, 4900, 9900))
        currency = customer.currency if customer and customer.currency else "USD"
        external_id = f"demo_hist_{number:04d}"
        result = invoice_record_failure(
            tenant=tenant, provider=DEMO_PROVIDER, external_invoice_id=external_id, amount_minor=amount,
            currency=currency, failure_code=rng.choice(FAILURE_CODES), attempt=rng.randint(1, 3),
            customer=customer, subscription_id=f"demo_sub_{number:04d}", event_ref="demo_history",
            occurred_at=failed_at,
        )
        invoice = result.invoice
        if invoice is None:
            continue
        written += 1
        age_days = (now - failed_at).days
        treated = invoice.arm == Invoice.Arm.TREATMENT
        if rng.random() < P_SELF_CURE:
            invoice_record_payment(tenant=tenant, provider=DEMO_PROVIDER, external_invoice_id=external_id,
                                   amount_paid_minor=amount, currency=currency, event_ref="demo_history",
                                   occurred_at=failed_at + timedelta(hours=rng.uniform(2, 30)))
            continue
        if treated and rng.random() < P_MESSAGED:
            sent_at = failed_at + timedelta(hours=rng.uniform(26, 48))
            if sent_at < now:
                invoice_mark_messaged(invoice=invoice, event_ref="demo_history", now=sent_at)
                if rng.random() < 0.5 and sent_at + timedelta(hours=6) < now:
                    invoice_mark_clicked(invoice=invoice, event_ref="demo_history", now=sent_at + timedelta(hours=6))
        settle_days = rng.uniform(3, 25)
        if settle_days > age_days:
            continue  # still open: too young to have settled
        settled_at = failed_at + timedelta(days=settle_days)
        if rng.random() < (P_RECOVER_TREATED if treated else P_RECOVER_HOLDOUT):
            invoice_record_payment(tenant=tenant, provider=DEMO_PROVIDER, external_invoice_id=external_id,
                                   amount_paid_minor=amount, currency=currency, event_ref="demo_history",
                                   occurred_at=settled_at)
        elif rng.random() < 0.5:
            invoice_mark_churned(tenant=tenant, provider=DEMO_PROVIDER, subscription_id=f"demo_sub_{number:04d}",
                                 event_ref="demo_history", occurred_at=settled_at)
        else:
            invoice_mark_exhausted(tenant=tenant, provider=DEMO_PROVIDER, external_invoice_id=external_id,
                                   event_ref="demo_history", occurred_at=settled_at)
    return written
