"""Signed Stripe events with known truth, delivered as a late backlog, against what the ledger
stores: provider times, refunds, voids and payments in the wrong currency (issue 12).

A seeded simulator invents invoices over several weeks in USD, EUR and JPY. Each fails one
to three times (the failures delivered in random order), then is paid after a known number of
hours, voided, or left open; some first receive a payment in another currency; some paid
invoices are refunded in one or two partial refunds (Stripe `charge.refunded`, cumulative
`amount_refunded`, delivered in random order, one redelivered); a few invoices are paid and
refunded without ever failing. Every event is signed and POSTed to
`/t/<tenant>/webhooks/stripe` today, weeks after it happened, and processed through the real
pipeline (ledger, dunning, approvals). Then the ledger is compared with the truth:

- median and 90th-percentile hours from first failure to payment;
- failures per ISO week of the first failure;
- net recovered (paid minus refunded) per currency, and refunded per currency;
- voided, open and recovered counts; currency-mismatch inconsistencies;
- no invoice the ledger did not see fail.

Prints the figures side by side and exits 1 if any differs. Runs on a fresh SQLite database
in a temporary directory unless DATABASE_URL is set (use your own PostgreSQL database).

Usage: .venv/bin/python bench/ledger_truth.py [--invoices 300] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECRET = "whsec_bench_ledger_truth"
START = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday, months before "now": a backlog
CURRENCIES = {"USD": (4900, 149900), "EUR": (2900, 59900), "JPY": (4500, 98000)}  # minor-unit ranges
WRONG = {"USD": "JPY", "EUR": "USD", "JPY": "USD"}


@dataclass
class Truth:
    invoice: str
    currency: str
    amount: int
    failures: list[datetime]
    outcome: str  # recovered | voided | open
    paid_at: datetime | None = None
    refunds: list[int] = field(default_factory=list)  # each partial refund
    wrong_currency_payment: bool = False


def simulate(rng: random.Random, n: int) -> tuple[list[Truth], list[dict[str, Any]]]:
    """The truth and the Stripe events it produces, in delivery order."""
    truths: list[Truth] = []
    per_invoice: list[list[dict[str, Any]]] = []
    for i in range(n):
        currency = rng.choice(sorted(CURRENCIES))
        low, high = CURRENCIES[currency]
        amount = rng.randint(low, high)
        first = START + timedelta(days=rng.uniform(0, 49))  # seven weeks of failures
        failures = [first + timedelta(days=3 * k) for k in range(rng.randint(1, 3))]
        roll = rng.random()
        outcome = "recovered" if roll < 0.55 else "voided" if roll < 0.7 else "open"
        truth = Truth(invoice=f"in_sim_{i:05d}", currency=currency, amount=amount, failures=failures,
                      outcome=outcome)
        events = [_failed(truth, at, attempt) for attempt, at in enumerate(failures, start=1)]
        rng.shuffle(events)  # Stripe does not guarantee order: an older failure may come later
        if outcome != "voided" and rng.random() < 0.1:
            truth.wrong_currency_payment = True
            events.append(_paid(truth, failures[0] + timedelta(hours=1), currency=WRONG[currency]))
        if outcome == "recovered":
            truth.paid_at = failures[0] + timedelta(hours=rng.expovariate(1 / 150))
            events.append(_paid(truth, truth.paid_at))
            if rng.random() < 0.3:
                parts = [rng.randint(1, amount // 2)] if rng.random() < 0.5 else [amount // 3, amount // 4]
                truth.refunds = parts
                cumulative = [sum(parts[: k + 1]) for k in range(len(parts))]
                refunds = [_refunded(truth, total, truth.paid_at + timedelta(days=2 + k))
                           for k, total in enumerate(cumulative)]
                refunds.append(dict(refunds[-1]))  # a redelivery of the last one
                rng.shuffle(refunds)
                events.extend(refunds)
        elif outcome == "voided":
            events.append(_voided(truth, failures[-1] + timedelta(days=5)))
        truths.append(truth)
        per_invoice.append(events)
    for j in range(max(1, n // 20)):  # paid (and refunded) without ever failing: never counted
        ghost = Truth(invoice=f"in_ghost_{j:04d}", currency="USD", amount=9900, failures=[], outcome="ghost")
        when = START + timedelta(days=rng.uniform(0, 49))
        ghost.paid_at = when
        per_invoice.append([_paid(ghost, when), _refunded(ghost, 9900, when + timedelta(days=1))])
    return truths, _interleave(rng, per_invoice)


def _interleave(rng: random.Random, queues: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Merge the invoices' event lists at random, keeping each invoice's own order."""
    queues = [list(q) for q in queues if q]
    out: list[dict[str, Any]] = []
    while queues:
        k = rng.randrange(len(queues))
        out.append(queues[k].pop(0))
        if not queues[k]:
            queues.pop(k)
    return out


_ids = iter(range(10**9))


def _event(kind: str, created: datetime, obj: dict[str, Any], api_version: str = "2024-06-20") -> dict[str, Any]:
    return {"id": f"evt_sim_{next(_ids):07d}", "object": "event", "api_version": api_version,
            "created": int(created.timestamp()), "livemode": False, "type": kind, "data": {"object": obj}}


def _invoice(truth: Truth, **fields: Any) -> dict[str, Any]:
    return {"id": truth.invoice, "object": "invoice", "customer": f"cus_{truth.invoice}",
            "customer_email": f"billing+{truth.invoice}@example.com", "customer_name": "Sim Customer",
            "currency": truth.currency.lower(), "amount_due": truth.amount, "amount_paid": 0,
            "collection_method": "charge_automatically", "subscription": f"sub_{truth.invoice}", **fields}


def _failed(truth: Truth, at: datetime, attempt: int) -> dict[str, Any]:
    return _event("invoice.payment_failed", at, _invoice(
        truth, status="open", attempt_count=attempt, next_payment_attempt=int((at + timedelta(days=3)).timestamp()),
        charge={"id": f"ch_fail_{truth.invoice}_{attempt}", "failure_code": "insufficient_funds",
                "outcome": {}, "payment_method_details": {"type": "card"}}))


def _paid(truth: Truth, at: datetime, *, currency: str | None = None) -> dict[str, Any]:
    obj = _invoice(truth, status="paid", amount_paid=truth.amount, status_transitions={"paid_at": int(at.timestamp())})
    if currency:
        obj["currency"] = currency.lower()
    # the event itself is created a few seconds after the payment
    return _event("invoice.paid", at + timedelta(seconds=3), obj)


def _refunded(truth: Truth, cumulative: int, at: datetime) -> dict[str, Any]:
    return _event("charge.refunded", at, {
        "id": f"ch_{truth.invoice}", "object": "charge", "amount": truth.amount, "amount_refunded": cumulative,
        "currency": truth.currency.lower(), "invoice": truth.invoice, "status": "succeeded"})


def _voided(truth: Truth, at: datetime) -> dict[str, Any]:
    return _event("invoice.voided", at + timedelta(seconds=2), _invoice(
        truth, status="void", status_transitions={"voided_at": int(at.timestamp())}))


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def measure_truth(truths: list[Truth]) -> dict[str, Any]:
    recovered = [t for t in truths if t.outcome == "recovered"]
    hours = [(t.paid_at - min(t.failures)).total_seconds() / 3600 for t in recovered]  # type: ignore[operator]
    net: Counter[str] = Counter()
    refunded: Counter[str] = Counter()
    for t in recovered:
        net[t.currency] += t.amount - sum(t.refunds)
        refunded[t.currency] += sum(t.refunds)
    return {
        "median_hours_to_recovery": round(statistics.median(hours), 2),
        "p90_hours_to_recovery": round(_p90(hours), 2),
        "failures_per_week": dict(sorted(Counter(_week(min(t.failures)) for t in truths).items())),
        "net_recovered_minor": dict(sorted(net.items())),
        "refunded_minor": dict(sorted(refunded.items())),
        "states": dict(sorted(Counter(t.outcome if t.outcome != "open" else "failed" for t in truths).items())),
        "currency_mismatches": sum(t.wrong_currency_payment for t in truths),
        "invoices": len(truths),
    }


def measure_ledger(tenant: Any) -> dict[str, Any]:
    from ledger.models import Invoice, LedgerInconsistency

    rows = list(Invoice.objects.filter(tenant=tenant))
    recovered = [r for r in rows if r.state == "recovered"]
    hours = [(r.recovered_at - r.failed_at).total_seconds() / 3600 for r in recovered]
    net: Counter[str] = Counter()
    refunded: Counter[str] = Counter()
    for r in recovered:
        net[r.currency] += r.recovered_minor - r.refunded_minor
        refunded[r.currency] += r.refunded_minor
    # messaged / clicked are still open: compare them as the simulator's "open"
    states = Counter("failed" if r.state in Invoice.OPEN_STATES else r.state for r in rows)
    return {
        "median_hours_to_recovery": round(statistics.median(hours), 2) if hours else None,
        "p90_hours_to_recovery": round(_p90(hours), 2) if hours else None,
        "failures_per_week": dict(sorted(Counter(_week(r.failed_at) for r in rows).items())),
        "net_recovered_minor": dict(sorted(net.items())),
        "refunded_minor": dict(sorted(refunded.items())),
        "states": dict(sorted(states.items())),
        "currency_mismatches": LedgerInconsistency.objects.filter(tenant=tenant, kind="currency_mismatch").count(),
        "invoices": len(rows),
    }


def _week(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invoices", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    if "DATABASE_URL" not in os.environ:
        work = tempfile.mkdtemp(prefix="pp-bench-ledger-truth.")
        os.environ["DATABASE_URL"] = f"sqlite:///{work}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paypilot.settings")
    os.environ["PAYPILOT_LOG_LEVEL"] = "WARNING"
    os.environ["PAYPILOT_Q_SYNC"] = "1"  # each delivery processed inside its request
    os.environ["PAYPILOT_RATE_LIMIT_PER_IP"] = str(10**9)  # one client sends the whole backlog
    os.environ["OPENAI_API_KEY"] = ""
    os.environ["PAYPILOT_LLM_DRAFT"] = "0"
    sys.path.insert(0, str(ROOT))

    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from integrations.models import WebhookEvent
    from integrations.providers.stripe import sign
    from integrations.services import credential_set
    from paypilot.models import Tenant
    from paypilot.services import tenant_create

    slug = f"truth-{args.seed}-{int(time.time())}"
    tenant = tenant_create(slug=slug, name="Ledger truth")
    credential_set(tenant=tenant, provider="stripe", secret=SECRET)
    truths, events = simulate(random.Random(args.seed), args.invoices)
    client = Client()
    started = time.perf_counter()
    for payload in events:
        body = json.dumps(payload, separators=(",", ":")).encode()
        response = client.post(f"/t/{slug}/webhooks/stripe", data=body, content_type="application/json",
                               headers={"Stripe-Signature": sign(body=body, secret=SECRET)})
        if response.status_code != 200:
            raise SystemExit(f"delivery refused: {response.status_code} {response.content[:200]!r}")
    elapsed = time.perf_counter() - started
    failed_events = WebhookEvent.objects.filter(tenant=Tenant.objects.get(slug=slug), status="failed").count()

    truth, ledger = measure_truth(truths), measure_ledger(tenant)
    print(f"{len(events)} signed Stripe events for {args.invoices} invoices (seed {args.seed}), "
          f"delivered as a backlog in {elapsed:.1f} s; events failed in processing: {failed_events}")
    differ = 0
    for key in truth:
        same = truth[key] == ledger[key]
        differ += not same
        print(f"{'ok  ' if same else 'DIFF'} {key}:\n      truth  {truth[key]}\n      ledger {ledger[key]}")
    print("ledger matches the truth" if not differ and not failed_events else f"{differ} figure(s) differ")
    raise SystemExit(1 if differ or failed_events else 0)


if __name__ == "__main__":
    main()
