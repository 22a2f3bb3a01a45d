"""A tenant rule version can say "don't email for this code" (`no_email`): the pipeline records
the decision and writes no draft, the networks' and no-retry rules still hold, and the shadow
replay counts the drafts a candidate would not have written (joined to the drafts actually
stored) and the money per currency, never summed across currencies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from approvals.models import ApprovalRequest
from decisions import selectors, services
from decisions.models import DecisionRecord, RuleVersion
from decisions.rules import NO_EMAIL_ACTION, decide
from decisions.shadow import shadow_replay
from decisions.tables import TableRow
from decisions.tests.rule_users import staff_user
from decisions.versions import GuardRailError, row_check
from dunning.models import Draft
from dunning.services import draft_for_invoice
from dunning.tests.factories import CustomerFactory, InvoiceFactory
from integrations.handoff import OUTCOME_NO_EMAIL
from ledger.models import Invoice
from operations.tests.factories import person
from operations.tests.gdpr_setup import deliver_failure
from paypilot.models import AuditEvent, Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    selectors.rule_table_cache_clear()
    yield
    selectors.rule_table_cache_clear()


def _version(tenant: Tenant, **actions: str) -> RuleVersion:
    version = services.rule_version_create(tenant=tenant, user_id=None, note="no email")
    for code, action in actions.items():
        version.rows.filter(failure_code=code).update(action=action)
    return version


def _activate(tenant: Tenant, version: RuleVersion) -> None:
    alice = staff_user(tenant=tenant, username=f"alice{version.pk}")
    bob = staff_user(tenant=tenant, username=f"bob{version.pk}")
    services.rule_version_approve(version=version, user=alice)
    assert services.rule_version_approve(version=version, user=bob).activated
    selectors.rule_table_cache_clear()


def _invoice(tenant: Tenant, ref: str, currency: str, amount: int, code: str = "insufficient_funds") -> Invoice:
    customer = CustomerFactory(tenant=tenant, external_id=f"cus_{ref}", currency=currency, mrr_minor=amount)
    return InvoiceFactory(tenant=tenant, customer=customer, currency=currency, amount_minor=amount,
                          failure_code=code, external_invoice_id=ref)


def test_guard_rails_allow_no_email_within_the_no_retry_rules() -> None:
    row_check(failure_code="insufficient_funds", row=TableRow(action=NO_EMAIL_ACTION, retry_in_days=3, offer="x"))
    row_check(failure_code="issuer_do_not_retry", row=TableRow(action=NO_EMAIL_ACTION, retry_in_days=0, offer="x"))
    with pytest.raises(GuardRailError) as refused:
        row_check(failure_code="issuer_do_not_retry",
                  row=TableRow(action=NO_EMAIL_ACTION, retry_in_days=3, offer="x"))
    assert refused.value.reason == "no_retry_code_retries" and refused.value.field == "retry_in_days"


def test_no_email_keeps_the_retry_but_never_one_a_network_forbids(tenant) -> None:
    table = selectors.rule_table_for_version(version=_version(tenant, insufficient_funds=NO_EMAIL_ACTION))
    quiet = decide(failure_code="insufficient_funds", table=table)
    assert quiet.strategy.action == NO_EMAIL_ACTION and quiet.schedule.retry_at is not None  # a silent retry
    forbidden = decide(failure_code="insufficient_funds", table=table, card_brand="mastercard",
                       network_advice_code="03")
    assert forbidden.strategy.action == NO_EMAIL_ACTION and forbidden.schedule.retry_at is None
    assert forbidden.schedule.source == "network_rule" and forbidden.network_rules


def test_an_active_no_email_version_writes_no_draft_end_to_end(tenant, settings) -> None:
    settings.PAYPILOT_SEND_EMAIL = True
    settings.PAYPILOT_ALLOWED_RECIPIENTS = ["*"]
    # Before: the Stripe expired-card failure is drafted and waits for approval.
    before = deliver_failure(tenant, person("drafted"), invoice_id="in_drafted_1", event_id="evt_drafted_1")
    assert before.outcome == "draft_opened" and Draft.objects.count() == 1

    _activate(tenant, _version(tenant, card_expired=NO_EMAIL_ACTION))
    event = deliver_failure(tenant, person("quiet"), invoice_id="in_quiet_1", event_id="evt_quiet_1")
    assert event.status == "processed" and event.outcome == OUTCOME_NO_EMAIL
    record = DecisionRecord.objects.get(invoice_ref="in_quiet_1")
    assert record.action == NO_EMAIL_ACTION and record.rule_version_id is not None
    assert record.currency == Invoice.objects.get(external_invoice_id="in_quiet_1").currency
    assert Draft.objects.count() == 1  # still only the earlier one
    assert not ApprovalRequest.objects.filter(invoice__external_invoice_id="in_quiet_1").exists()
    skipped = AuditEvent.objects.get(event="dunning.draft.skipped")
    assert skipped.detail["decision"] == record.pk and skipped.detail["action"] == NO_EMAIL_ACTION


def test_replay_counts_drafts_not_written_and_money_per_currency(tenant) -> None:
    # Drafted by the built-in table: two USD and one EUR insufficient_funds, one USD card_expired.
    for ref, currency, amount in (("in_u1", "USD", 10000), ("in_u2", "USD", 20000), ("in_e1", "EUR", 5000)):
        assert draft_for_invoice(invoice=_invoice(tenant, ref, currency, amount)) is not None
    draft_for_invoice(invoice=_invoice(tenant, "in_c1", "USD", 7000, code="card_expired"))
    # Rows stored before decisions carried a currency: one names a GBP ledger invoice, one
    # names nothing the ledger knows. Both /decide answers with an amount; no draft.
    _invoice(tenant, "in_g1", "GBP", 3000)
    for ref in ("in_g1", "in_nowhere"):
        services.decision_record(tenant=tenant, invoice_ref=ref, source="api",
                                 decision=decide(failure_code="insufficient_funds", amount_minor=3000))
    assert DecisionRecord.objects.filter(currency__isnull=True).count() == 2
    assert set(DecisionRecord.objects.filter(source="pipeline").values_list("currency", flat=True)) == {"USD", "EUR"}

    candidate = selectors.rule_table_for_version(version=_version(tenant, insufficient_funds=NO_EMAIL_ACTION))
    report = shadow_replay(tenant=tenant, candidate=candidate, days=30).as_dict()
    assert report["decisions"] == 6 and report["changed"] == 5
    assert report["drafts_written"] == 4
    assert report["drafts_not_written"] == 3  # the three insufficient_funds drafts; card_expired still drafts
    assert report["by_failure_code"]["insufficient_funds"]["drafts_not_written"] == 3
    assert report["by_failure_code"].get("card_expired", {}).get("drafts_not_written", 0) == 0
    assert report["retries_forbidden"] == 0  # no_email keeps the retry
    money = report["money"]["by_currency"]
    assert list(money) == ["EUR", "GBP", "USD", "unknown"]
    stored = {r.invoice_ref: r for r in DecisionRecord.objects.all()}
    assert money["USD"] == {"decisions": 2, "expected_recovered_minor": stored["in_u1"].expected_recovered_minor
                            + stored["in_u2"].expected_recovered_minor,
                            "annual_value_at_risk_minor": 12 * (10000 + 20000)}
    assert money["EUR"]["decisions"] == 1 and money["EUR"]["annual_value_at_risk_minor"] == 12 * 5000
    assert money["GBP"]["decisions"] == 1 and money["unknown"]["decisions"] == 1  # resolved / not resolvable
    step = report["by_failure_code"]["insufficient_funds"]["transitions"][0]
    assert step["to"] == {"action": NO_EMAIL_ACTION, "retry_in_days": 3, "retry": True, "drafts": False}
    assert set(step["money"]) == {"EUR", "GBP", "USD", "unknown"}


def test_replay_counts_drafts_a_candidate_would_add_back(tenant) -> None:
    _activate(tenant, _version(tenant, insufficient_funds=NO_EMAIL_ACTION))
    for ref in ("in_q1", "in_q2"):
        assert draft_for_invoice(invoice=_invoice(tenant, ref, "USD", 1000)) is None
    assert Draft.objects.count() == 0 and DecisionRecord.objects.filter(action=NO_EMAIL_ACTION).count() == 2
    back = selectors.rule_table_for_version(version=services.rule_version_create(tenant=tenant, user_id=None))
    report = shadow_replay(tenant=tenant, candidate=back, days=30,
                           now=services.now_ms() + timedelta(seconds=1)).as_dict()
    assert report["drafts_written"] == 0 and report["drafts_added"] == 2 and report["drafts_not_written"] == 0
