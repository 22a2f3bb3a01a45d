"""Property test: random event sequences against a plain model of the ledger rules (states,
provider times, voids, refunds and currency inconsistencies)."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum
from django.test import override_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from ledger import services
from ledger.models import Invoice, InvoiceRefund, InvoiceTransition, LedgerInconsistency, PaidBeforeFailure
from paypilot.services import tenant_create

IDS = [f"in_{i}" for i in range(4)]
SUB_OF = {"in_0": "sub_a", "in_1": "sub_a", "in_2": "sub_b", "in_3": "sub_b"}
OPEN = {"failed", "messaged", "clicked"}
TERMINAL = {"recovered", "churned", "exhausted", "voided"}
# The rules written out again, independently of ledger.services.ALLOWED_MOVES.
MOVES = {
    "failed": {"messaged", "recovered", "churned", "exhausted", "voided"},
    "messaged": {"messaged", "clicked", "recovered", "churned", "exhausted", "voided"},
    "clicked": {"messaged", "recovered", "churned", "exhausted", "voided"},
    "recovered": set(), "churned": set(), "exhausted": set(), "voided": set(),
}
BASE = datetime(2026, 3, 2, tzinfo=UTC)
REFUND_REFS = ["re_1", "re_2", "re_3"]  # shared by the invoices: a refund id is unique per provider
SEED, PCT = "prop-seed", 50
_tenant_numbers = itertools.count()


def model_arm(invoice_id: str) -> str:
    bucket = int.from_bytes(hashlib.sha256(f"{SEED}:{invoice_id}".encode()).digest()[:8], "big") % 100
    return "holdout" if bucket < PCT else "treatment"


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tenant = tenant_create(slug=f"prop-{next(_tenant_numbers)}", name="prop")
        self.state: dict[str, str] = {}  # invoice id -> state, absent = never seen
        self.amount: dict[str, int] = {}
        self.recovered: dict[str, int] = {}
        self.marker: set[str] = set()
        self.moves: dict[str, int] = {}  # expected transition rows per invoice
        self.failed_at: dict[str, datetime] = {}  # earliest provider failure time seen
        self.refunded: dict[str, int] = {}
        self.refund_refs: set[str] = set()  # refund refs stored (tenant-wide, one provider)
        self.scope_total: dict[str, int] = {}  # cumulative refunds stored per invoice's charge
        self.inconsistencies = 0
        self.last: tuple | None = None

    # --- helpers ---------------------------------------------------------------------------
    def _invoice(self, invoice_id: str) -> Invoice:
        return Invoice.objects.get(tenant=self.tenant, provider="stripe", external_invoice_id=invoice_id)

    def _moved(self, invoice_id: str, to: str) -> None:
        self.state[invoice_id] = to
        self.moves[invoice_id] += 1

    # --- events ----------------------------------------------------------------------------
    @rule(invoice_id=st.sampled_from(IDS), amount=st.integers(0, 10**9), attempt=st.integers(1, 6),
          code=st.sampled_from(["card_expired", "insufficient_funds", "generic_decline"]),
          hours=st.integers(0, 24 * 60))
    def failure(self, invoice_id: str, amount: int, attempt: int, code: str, hours: int) -> None:
        self.last = ("failure", invoice_id, amount, attempt, code, hours)
        occurred_at = BASE + timedelta(hours=hours)
        result = services.invoice_record_failure(
            tenant=self.tenant, provider="stripe", external_invoice_id=invoice_id,
            amount_minor=amount, currency="usd", failure_code=code, attempt=attempt,
            subscription_id=SUB_OF[invoice_id], occurred_at=occurred_at,
        )
        if invoice_id in self.marker:
            assert result.outcome == "already_paid" and result.invoice is None
            return
        if invoice_id not in self.state:
            assert result.outcome == "recorded" and result.created
            assert result.invoice.arm == model_arm(invoice_id)
            self.state[invoice_id] = "failed"
            self.amount[invoice_id] = amount
            self.moves[invoice_id] = 1
        elif self.state[invoice_id] in OPEN:
            assert result.outcome == "repeat"
            self.amount[invoice_id] = amount
        else:
            assert result.outcome == "closed_noop"
        # the first failure is the earliest one reported, open or closed, in any order
        self.failed_at[invoice_id] = min(self.failed_at.get(invoice_id, occurred_at), occurred_at)

    @rule(invoice_id=st.sampled_from(IDS), amount=st.integers(0, 10**9),
          currency=st.sampled_from(["usd", "usd", "jpy"]))
    def paid(self, invoice_id: str, amount: int, currency: str) -> None:
        self.last = ("paid", invoice_id, amount, currency)
        result = services.invoice_record_payment(
            tenant=self.tenant, provider="stripe", external_invoice_id=invoice_id,
            amount_paid_minor=amount, currency=currency,
        )
        if invoice_id not in self.state:
            assert result.outcome == "paid_before_failure"
            self.marker.add(invoice_id)
        elif self.state[invoice_id] in OPEN and currency != "usd":
            assert result.outcome == "refused_currency_mismatch"  # never converted, left open
            self.inconsistencies += 1
        elif self.state[invoice_id] in OPEN:
            assert result.outcome == "recovered"
            self._moved(invoice_id, "recovered")
            self.recovered[invoice_id] = amount
        else:
            assert result.outcome == "noop"

    @rule(subscription=st.sampled_from(["sub_a", "sub_b", "sub_none"]))
    def cancelled(self, subscription: str) -> None:
        self.last = ("cancelled", subscription)
        count = services.invoice_mark_churned(tenant=self.tenant, provider="stripe",
                                              subscription_id=subscription)
        expected = [i for i, s in self.state.items() if SUB_OF[i] == subscription and s in OPEN]
        assert count == len(expected)
        for invoice_id in expected:
            self._moved(invoice_id, "churned")

    @rule(invoice_id=st.sampled_from(IDS))
    def exhausted(self, invoice_id: str) -> None:
        self.last = ("exhausted", invoice_id)
        outcome = services.invoice_mark_exhausted(tenant=self.tenant, provider="stripe",
                                                  external_invoice_id=invoice_id)
        if invoice_id not in self.state:
            assert outcome == "unknown"
        elif self.state[invoice_id] in OPEN:
            assert outcome == "exhausted"
            self._moved(invoice_id, "exhausted")
        else:
            assert outcome == "noop"

    @rule(invoice_id=st.sampled_from(IDS))
    def voided(self, invoice_id: str) -> None:
        self.last = ("voided", invoice_id)
        outcome = services.invoice_record_void(tenant=self.tenant, provider="stripe",
                                               external_invoice_id=invoice_id)
        if invoice_id not in self.state:
            assert outcome == "unknown"
        elif self.state[invoice_id] in OPEN:
            assert outcome == "voided"
            self._moved(invoice_id, "voided")
        else:
            assert outcome == "noop"  # a recovered invoice stays recovered

    def _refund_applies(self, invoice_id: str, part: int, ref: str) -> str:
        remaining = self.recovered.get(invoice_id, 0) - self.refunded.get(invoice_id, 0)
        applied = min(part, remaining)
        if applied < part:
            self.inconsistencies += 1
        if applied > 0:
            self.refunded[invoice_id] = self.refunded.get(invoice_id, 0) + applied
            self.refund_refs.add(ref)
        return "refunded" if applied == part else "refunded_capped"

    def _refund_gate(self, invoice_id: str, ref: str, currency: str) -> str | None:
        if invoice_id not in self.state:
            return "noop_refund_unknown_invoice"
        if self.state[invoice_id] != "recovered":
            return "noop_refund_not_recovered"
        if ref in self.refund_refs:
            return "noop_refund_duplicate"
        if currency != "usd":
            self.inconsistencies += 1
            return "refused_currency_mismatch"
        return None

    @rule(invoice_id=st.sampled_from(IDS), ref=st.sampled_from(REFUND_REFS), amount=st.integers(1, 10**9),
          currency=st.sampled_from(["usd", "usd", "eur"]))
    def refund(self, invoice_id: str, ref: str, amount: int, currency: str) -> None:
        self.last = ("refund", invoice_id, ref, amount, currency)
        result = services.invoice_record_refund(
            tenant=self.tenant, provider="stripe", external_invoice_id=invoice_id, refund_ref=ref,
            currency=currency, amount_minor=amount,
        )
        expected = self._refund_gate(invoice_id, ref, currency) or self._refund_applies(invoice_id, amount, ref)
        assert result.outcome == expected

    @rule(invoice_id=st.sampled_from(IDS), total=st.integers(0, 10**9))
    def refund_cumulative(self, invoice_id: str, total: int) -> None:
        """A charge's `amount_refunded`: the total so far, in any order, repeated or not."""
        self.last = ("refund_cumulative", invoice_id, total)
        scope = f"ch_{invoice_id}"
        result = services.invoice_record_refund(
            tenant=self.tenant, provider="stripe", external_invoice_id=invoice_id, refund_ref=scope,
            currency="usd", cumulative_minor=total,
        )
        ref = f"{scope}#{total}"
        expected = self._refund_gate(invoice_id, ref, "usd")
        if expected is None:
            part = total - self.scope_total.get(invoice_id, 0)
            if part <= 0:
                expected = "noop_refund_stale"
            else:
                before = self.refunded.get(invoice_id, 0)
                expected = self._refund_applies(invoice_id, part, ref)
                self.scope_total[invoice_id] = (self.scope_total.get(invoice_id, 0)
                                                + self.refunded.get(invoice_id, 0) - before)
        assert result.outcome == expected

    @rule(invoice_id=st.sampled_from(IDS))
    def sent(self, invoice_id: str) -> None:
        self.last = ("sent", invoice_id)
        if invoice_id not in self.state:
            return
        invoice = self._invoice(invoice_id)
        state = self.state[invoice_id]
        if state in OPEN and model_arm(invoice_id) == "holdout":
            with pytest.raises(services.IllegalTransition):
                services.invoice_mark_messaged(invoice=invoice)
            return
        moved = services.invoice_mark_messaged(invoice=invoice)
        assert moved == (state in {"failed", "clicked"})
        if moved:
            self._moved(invoice_id, "messaged")

    @rule(invoice_id=st.sampled_from(IDS))
    def clicked(self, invoice_id: str) -> None:
        self.last = ("clicked", invoice_id)
        if invoice_id not in self.state:
            return
        invoice = self._invoice(invoice_id)
        state = self.state[invoice_id]
        if state == "failed":
            with pytest.raises(services.IllegalTransition):
                services.invoice_mark_clicked(invoice=invoice)
            return
        moved = services.invoice_mark_clicked(invoice=invoice)
        assert moved == (state == "messaged")
        if moved:
            self._moved(invoice_id, "clicked")

    @rule(invoice_id=st.sampled_from(IDS), to=st.sampled_from(sorted(MOVES)))
    def direct_transition(self, invoice_id: str, to: str) -> None:
        """Any move asked of the one locking service directly, legal or not."""
        self.last = None
        if invoice_id not in self.state:
            return
        invoice = self._invoice(invoice_id)
        state = self.state[invoice_id]
        legal = to in MOVES[state] and not (to == "messaged" and model_arm(invoice_id) == "holdout")
        if to == state:
            assert services.invoice_transition(invoice=invoice, to=to, cause="prop") is False
        elif legal:
            assert services.invoice_transition(invoice=invoice, to=to, cause="prop") is True
            self._moved(invoice_id, to)
            if to == "recovered":
                self.recovered[invoice_id] = 0
        else:
            with pytest.raises(services.IllegalTransition):
                services.invoice_transition(invoice=invoice, to=to, cause="prop")
        assert invoice.state == self.state[invoice_id]  # caller's instance refreshed

    @rule()
    def duplicate(self) -> None:
        """Redeliver the previous event: the model must not change."""
        if self.last is None:
            return
        before = (dict(self.state), dict(self.moves), set(self.marker), dict(self.refunded),
                  dict(self.failed_at))
        kind, *args = self.last
        if kind == "failure":  # a redelivered first failure is a repeat, not a second invoice
            self.failure(*args)
        elif kind == "voided":
            self.voided(*args)
        elif kind == "refund":
            self.refund(*args)
        elif kind == "refund_cumulative":
            self.refund_cumulative(*args)
        elif kind == "paid":
            self.paid(*args)
        elif kind == "cancelled":
            self.cancelled(*args)
        elif kind == "exhausted":
            self.exhausted(*args)
        elif kind == "sent":
            self.sent(*args)
        elif kind == "clicked":
            self.clicked(*args)
        assert (self.state, self.moves, self.marker, self.refunded, self.failed_at) == before

    # --- invariants ---------------------------------------------------------------------------
    @invariant()
    def ledger_matches_model(self) -> None:
        rows = {i.external_invoice_id: i for i in Invoice.objects.filter(tenant=self.tenant)}
        assert set(rows) == set(self.state)
        for invoice_id, invoice in rows.items():
            assert invoice.state == self.state[invoice_id]
            assert invoice.amount_minor == self.amount[invoice_id] >= 0
            assert invoice.recovered_minor == self.recovered.get(invoice_id, 0) >= 0
            assert invoice.arm == model_arm(invoice_id)
            assert invoice.failed_at == self.failed_at[invoice_id]
            # refunds: mirrored by the append-only rows, never below zero net
            assert invoice.refunded_minor == self.refunded.get(invoice_id, 0)
            rows_sum = InvoiceRefund.objects.filter(invoice=invoice).aggregate(s=Sum("amount_minor"))["s"] or 0
            assert rows_sum == invoice.refunded_minor
            assert 0 <= invoice.refunded_minor <= invoice.recovered_minor
            assert (invoice.state in Invoice.REPORTED_STATES) == (invoice.state != "voided")
        markers = set(PaidBeforeFailure.objects.filter(tenant=self.tenant)
                      .values_list("external_invoice_id", flat=True))
        assert markers == self.marker
        assert LedgerInconsistency.objects.filter(tenant=self.tenant).count() == self.inconsistencies

    @invariant()
    def one_row_per_move_and_only_allowed_moves(self) -> None:
        for invoice_id in self.state:
            history = list(InvoiceTransition.objects.filter(
                invoice__tenant=self.tenant, invoice__external_invoice_id=invoice_id).order_by("id"))
            assert len(history) == self.moves[invoice_id]
            assert (history[0].from_state, history[0].to_state) == ("", "failed")
            for before, after in itertools.pairwise(history):
                assert after.from_state == before.to_state
                assert after.to_state in MOVES[after.from_state]
                assert after.from_state not in TERMINAL
            assert history[-1].to_state == self.state[invoice_id]


@pytest.mark.django_db
@override_settings(PAYPILOT_HOLDOUT_PCT=PCT, PAYPILOT_HOLDOUT_SEED=SEED)
def test_ledger_rules_hold_for_random_event_sequences() -> None:
    run_state_machine_as_test(
        LedgerMachine,
        settings=settings(max_examples=300, stateful_step_count=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )
