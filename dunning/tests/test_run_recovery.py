"""run_recovery(): the seven steps, decisions as the only source of policy, storing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from decisions.models import DecisionRecord
from decisions.rules import decide
from dunning.catalogue import catalogue
from dunning.models import Draft
from dunning.pipeline import STEPS, RecoveryInput
from dunning.services import run_recovery
from dunning.tests.factories import INJECTION, CustomerFactory, demo_customers
from paypilot.models import AuditEvent

NOW = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


def _event(**overrides):  # type: ignore[no-untyped-def]
    fields = {"customer_id": "cust_new", "amount_minor": 149900, "currency": "USD",
              "failure_code": "card_expired", "attempt": 1}
    return RecoveryInput(**{**fields, **overrides})


def test_the_seven_steps_in_order() -> None:
    assert [s.__name__ for s in STEPS] == [
        "retrieve_context", "assess_risk", "diagnose_reason", "choose_strategy", "schedule_retry",
        "draft_message", "finalize",
    ]


@pytest.mark.django_db
def test_payload_shape_and_values(tenant) -> None:  # type: ignore[no-untyped-def]
    out = run_recovery(tenant=tenant, event=_event(customer_name="Acme Robotics", plan="Scale"), now=NOW).payload
    assert {"diagnosis", "risk", "strategy", "schedule", "message", "subject", "locale", "impact",
            "fallback_used"} <= set(out)
    assert out["risk"] == {"attempt": 1, "prior_failures": 0, "churn_risk": "low", "escalate": False}
    assert out["strategy"]["action"] == "request_card_update"
    assert out["schedule"] == {"retry_in_days": 1, "next_retry_at": "2026-07-02T09:00:00+00:00",
                               "retry_on": "2026-07-02", "timezone": "UTC", "source": "paypilot_suggestion"}
    assert out["impact"] == {
        "currency": "USD", "amount_at_risk": 1499.0, "amount_at_risk_minor": 149900,
        "recovery_likelihood": 0.7, "expected_recovered": 1049.3, "expected_recovered_minor": 104930,
        "annual_value_at_risk": 17988.0, "annual_value_at_risk_minor": 1798800, "churn_risk": "low",
    }
    assert out["message"].startswith("Hi Acme Robotics,") and "your Scale plan" in out["message"]
    assert out["message"].endswith("Acme Ltd")  # the tenant's name signs the email
    assert (out["locale"], out["source"], out["fallback_used"]) == ("en", "template", False)
    assert len(out["playbook"]) == 3


@pytest.mark.django_db
@pytest.mark.parametrize("code", ["card_expired", "insufficient_funds", "generic_decline", "issuer_do_not_retry",
                                  "card_details_invalid", "direct_debit_not_retried", "retries_exhausted",
                                  "brand_new_code"])
@pytest.mark.parametrize(("attempt", "history"), [(1, []), (3, []), (1, ["failed", "failed", "failed", "ok"])])
def test_strategy_schedule_and_impact_are_exactly_what_decisions_says(tenant, code, attempt, history) -> None:  # type: ignore[no-untyped-def]
    CustomerFactory(tenant=tenant, external_id="c1", mrr_minor=5000, currency="USD",
                    payment_history=[{"status": s} for s in history])
    out = run_recovery(tenant=tenant, event=_event(customer_id="c1", failure_code=code, attempt=attempt,
                                                    amount_minor=5000), now=NOW).payload
    expected = decide(failure_code=code, attempt=attempt, prior_failures=history.count("failed"), amount_minor=5000,
                      mrr_minor=5000, now=NOW)
    assert out["risk"]["churn_risk"] == expected.churn_risk
    assert out["risk"]["prior_failures"] == expected.prior_failures
    assert out["strategy"]["action"] == expected.strategy.action
    assert out["strategy"]["retry_in_days"] == expected.strategy.retry_in_days
    assert out["strategy"]["escalated"] == expected.strategy.escalated
    assert out["strategy"]["rule_fired"] == expected.rule_fired
    assert out["schedule"]["next_retry_at"] == (
        expected.schedule.retry_at.isoformat() if expected.schedule.retry_at else None)
    assert out["impact"]["expected_recovered_minor"] == expected.impact.expected_recovered_minor  # type: ignore[union-attr]
    assert out["impact"]["annual_value_at_risk_minor"] == expected.impact.annual_value_at_risk_minor  # type: ignore[union-attr]
    high = expected.churn_risk == "high"
    assert out["diagnosis"].endswith(catalogue().text("en", "urgency")) == high


@pytest.mark.django_db
def test_customer_on_record_wins_over_event_fields(tenant) -> None:  # type: ignore[no-untyped-def]
    customers = {c.external_id: c for c in demo_customers(tenant)}
    customers["cust_002"].locale = "fr"
    customers["cust_002"].save()
    out = run_recovery(tenant=tenant, event=_event(customer_id="cust_002", failure_code="insufficient_funds",
                                                    currency="EUR", amount_minor=29900, customer_name="Someone Else",
                                                    plan="Other", locale="de"), now=NOW).payload
    assert out["risk"]["prior_failures"] == 1  # from the record's history
    assert out["locale"] == "fr"
    assert out["message"].startswith("Bonjour Brightleaf Studios,")
    assert "votre abonnement Pro" in out["message"] and "Someone Else" not in out["message"]


@pytest.mark.django_db
def test_event_fields_are_used_when_the_customer_is_not_on_record(tenant) -> None:  # type: ignore[no-untyped-def]
    out = run_recovery(tenant=tenant, event=_event(customer_name="Nova Labs", plan="Team", locale="es-MX"),
                       now=NOW).payload
    assert out["locale"] == "es"
    assert out["message"].startswith("Hola, Nova Labs:") and "tu plan Team" in out["message"]
    assert out["risk"]["prior_failures"] == 0


@pytest.mark.django_db
def test_a_history_ending_in_this_failure_does_not_count_it_twice(tenant) -> None:  # type: ignore[no-untyped-def]
    CustomerFactory(tenant=tenant, external_id="c1", payment_history=[{"status": "failed"}, {"status": "ok"},
                                                                      {"status": "failed"}])
    out = run_recovery(tenant=tenant, event=_event(customer_id="c1")).payload
    assert out["risk"]["prior_failures"] == 1


@pytest.mark.django_db
def test_mrr_in_another_currency_is_not_used(tenant) -> None:  # type: ignore[no-untyped-def]
    CustomerFactory(tenant=tenant, external_id="c1", mrr_minor=1000, currency="EUR")
    out = run_recovery(tenant=tenant, event=_event(customer_id="c1", amount_minor=5000), now=NOW).payload
    assert out["impact"]["annual_value_at_risk_minor"] == 12 * 5000


@pytest.mark.django_db
@pytest.mark.parametrize("currency", ["EUR", "USD", "GBP", "JPY", "CHF", "MXN"])
def test_locale_never_comes_from_the_currency(tenant, currency) -> None:  # type: ignore[no-untyped-def]
    CustomerFactory(tenant=tenant, external_id="c1", locale="", currency=currency)
    out = run_recovery(tenant=tenant, event=_event(customer_id="c1", currency=currency, amount_minor=5000)).payload
    assert out["locale"] == "en" and out["locale_reason"] == "not_requested"
    CustomerFactory(tenant=tenant, external_id="c2", locale="de", currency=currency)
    out = run_recovery(tenant=tenant, event=_event(customer_id="c2", currency=currency, amount_minor=5000)).payload
    assert out["locale"] == "de"


@pytest.mark.django_db
def test_unknown_slots_fall_back_safely(tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.PAYPILOT_BUSINESS_NAME = ""
    tenant.name = "http://evil.example"
    out = run_recovery(tenant=tenant, event=_event(customer_name="", plan="")).payload
    assert out["message"].startswith("Hi there,") and "your subscription" in out["message"]
    assert out["message"].endswith("The billing team")


@pytest.mark.django_db
def test_store_records_the_decision_and_the_draft_in_one_go(tenant) -> None:  # type: ignore[no-untyped-def]
    result = run_recovery(tenant=tenant, event=_event(invoice_ref="in_123"), store=True, now=NOW)
    draft = result.draft
    assert draft is not None and Draft.objects.count() == 1
    record = DecisionRecord.objects.get()
    assert draft.decision == record and record.source == "pipeline" and record.invoice_ref == "in_123"
    assert (record.rule_fired, record.action) == ("card_expired", "request_card_update")
    assert (draft.subject, draft.body) == (result.payload["subject"], result.payload["message"])
    assert (draft.source, draft.fallback_used, draft.guard_verdict) == ("template", False, {"ok": True, "reasons": []})
    event = AuditEvent.objects.get(event="dunning.draft.created")
    assert event.detail["draft"] == draft.pk and event.detail["decision"] == record.pk


@pytest.mark.django_db
def test_a_decision_that_cannot_be_recorded_stores_nothing(tenant, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from dunning import services

    def broken(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("audit store down")

    monkeypatch.setattr(services, "decision_rows_insert", broken)
    with pytest.raises(RuntimeError):
        run_recovery(tenant=tenant, event=_event(), store=True)
    assert Draft.objects.count() == 0


@pytest.mark.django_db
def test_bad_input_raises(tenant) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        run_recovery(tenant=tenant, event=_event(attempt=0))
    with pytest.raises(ValueError):
        run_recovery(tenant=tenant, event=_event(currency="dollars"))


@pytest.mark.django_db
def test_injection_in_any_event_or_customer_field_never_reaches_the_output(tenant) -> None:  # type: ignore[no-untyped-def]
    CustomerFactory(tenant=tenant, external_id="rec", name=INJECTION, plan=INJECTION, locale=INJECTION[:16],
                    email="x@evil.example")
    events = [
        _event(customer_name=INJECTION), _event(plan=INJECTION), _event(locale=INJECTION),
        _event(customer_email=INJECTION), _event(customer_id=INJECTION), _event(failure_code=INJECTION),
        _event(invoice_ref=INJECTION), _event(customer_id="rec"),
    ]
    for event in events:
        out = run_recovery(tenant=tenant, event=event, store=True)
        text = repr(out.payload) + out.draft.subject + out.draft.body + out.draft.diagnosis  # type: ignore[union-attr]
        assert "evil.example" not in text and "ignore all previous" not in text.lower()
