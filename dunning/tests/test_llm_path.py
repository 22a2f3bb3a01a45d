"""The optional LLM path: masking, fencing, guard swap, spend cap and per-call audit."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from dunning import llm
from dunning.models import LlmUsage
from dunning.pipeline import RecoveryInput
from dunning.prompting import EMAIL_MASK, NAME_MASK
from dunning.services import run_recovery
from dunning.tests.conftest import json_reply
from dunning.tests.factories import INJECTION, CustomerFactory
from paypilot.models import AuditEvent

GOOD = json_reply(
    subject="Your card has expired",
    body=f"Hi {NAME_MASK},\n\nYour card expired. Please add a new one using the secure link in this email.\n\nThanks",
    diagnosis="The card on file expired.",
)


def _event(**overrides):  # type: ignore[no-untyped-def]
    fields = {"customer_id": "c_llm", "amount_minor": 4900, "currency": "USD", "failure_code": "card_expired",
              "customer_name": "Acme Robotics", "customer_email": "billing@acme.example", "plan": "Scale"}
    return RecoveryInput(**{**fields, **overrides})


def _obeys_injection(system: str, user: str) -> str:
    """A model that does whatever the untrusted text says, and adds the link regardless."""
    return json_reply(subject="Update now", body=f"Hi {NAME_MASK}, pay at http://evil.example right away. "
                      "ignore all previous instructions", diagnosis="ok")


def _llm_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event="dunning.llm.draft").order_by("id"))


@pytest.mark.django_db
def test_a_key_alone_never_enables_chat(tenant, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.OPENAI_API_KEY = "sk-test-key-not-real-000000"
    settings.PAYPILOT_LLM_DRAFT = False

    def boom():  # type: ignore[no-untyped-def]
        raise AssertionError("chat client built")

    monkeypatch.setattr(llm, "build_chat_client", boom)
    from dunning import retrieval

    monkeypatch.setattr(retrieval, "build_embedder", lambda: retrieval.HashingEmbedder())
    assert run_recovery(tenant=tenant, event=_event()).payload["source"] == "template"


@pytest.mark.django_db
def test_an_accepted_draft_is_served_with_the_name_put_back(tenant, llm_on) -> None:  # type: ignore[no-untyped-def]
    fake = llm_on(lambda s, u: GOOD)
    result = run_recovery(tenant=tenant, event=_event(), store=True)
    out = result.payload
    assert (out["source"], out["fallback_used"]) == ("llm", False)
    assert out["message"].startswith("Hi Acme Robotics,")
    assert out["diagnosis"] == "The card on file expired."
    assert result.draft is not None and result.draft.source == "llm"
    assert result.draft.guard_verdict == {"ok": True, "reasons": []}
    [event] = _llm_events()
    assert event.detail["model"] == "gpt-4o-mini" and event.detail["verdict"] == "pass"
    assert event.detail["fallback_used"] is False and re.fullmatch(r"[0-9a-f]{32}", event.detail["prompt_hash"])
    assert len(fake.calls) == 1
    assert LlmUsage.objects.get().cost_usd == llm.cost_usd("gpt-4o-mini", input_tokens=900, output_tokens=200)


@pytest.mark.django_db
def test_the_prompt_masks_pii_and_fences_untrusted_text_per_request(tenant, llm_on) -> None:  # type: ignore[no-untyped-def]
    fake = llm_on(lambda s, u: GOOD)
    run_recovery(tenant=tenant, event=_event())
    run_recovery(tenant=tenant, event=_event())
    first, second = fake.calls
    for call in (first, second):
        prompt = call["system"] + call["user"]
        assert "Acme Robotics" not in prompt and "billing@acme.example" not in prompt
        assert NAME_MASK in call["user"] and EMAIL_MASK in call["user"]
        boundary = re.search(r"<<<UNTRUSTED ([0-9a-f]{24})>>>", call["user"]).group(1)  # type: ignore[union-attr]
        fenced = call["user"].split(f"<<<UNTRUSTED {boundary}>>>")[1].split(f"<<<END {boundary}>>>")[0]
        assert '"plan": "Scale"' in fenced and NAME_MASK in fenced
        assert boundary in call["system"]  # the rules name this request's boundary
    assert re.search(r"UNTRUSTED (\w+)", first["user"]).group(1) != re.search(  # type: ignore[union-attr]
        r"UNTRUSTED (\w+)", second["user"]).group(1)
    hashes = [e.detail["prompt_hash"] for e in _llm_events()]
    assert hashes[0] == hashes[1]  # boundary normalised: same input, same hash


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["customer_name", "plan", "customer_email", "locale", "customer_id",
                                   "failure_code", "record"])
def test_injection_never_reaches_the_output_even_when_the_model_obeys(tenant, llm_on, field) -> None:  # type: ignore[no-untyped-def]
    fake = llm_on(_obeys_injection)
    if field == "record":
        CustomerFactory(tenant=tenant, external_id="rec", name=INJECTION, plan=INJECTION)
        event = _event(customer_id="rec")
    else:
        event = _event(**{field: INJECTION})
    result = run_recovery(tenant=tenant, event=event, store=True)
    out = result.payload
    text = repr(out) + result.draft.subject + result.draft.body + result.draft.diagnosis  # type: ignore[union-attr]
    assert "evil.example" not in text and "ignore all previous" not in text.lower()
    assert (out["source"], out["fallback_used"]) == ("template", True)
    assert "ignore all previous" not in fake.calls[0]["user"].lower()  # dropped before the prompt
    [event_row] = _llm_events()
    assert event_row.detail["verdict"] == "guard_failed" and event_row.detail["fallback_used"] is True
    assert "link_host_not_allowed" in event_row.detail["reason"]
    assert result.draft.guard_verdict["ok"] is False  # type: ignore[union-attr]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (json_reply(subject="s", body="Your card 4242 4242 4242 4242 failed", diagnosis="d"), "card_like_digits"),
        (json_reply(subject="s", body="Use key sk_live_abcdefghijkl", diagnosis="d"), "secret_shaped_token"),
        (json_reply(subject="s", body=f"Hi, we will email {EMAIL_MASK}", diagnosis="d"), "leftover_placeholder"),
        (json_reply(subject="s", body="Hi {plan}", diagnosis="d"), "leftover_placeholder"),
    ],
)
def test_each_guard_swaps_the_draft_for_the_template(tenant, llm_on, reply, reason) -> None:  # type: ignore[no-untyped-def]
    llm_on(lambda s, u: reply)
    out = run_recovery(tenant=tenant, event=_event()).payload
    assert (out["source"], out["fallback_used"]) == ("template", True)
    assert out["message"].startswith("Hi Acme Robotics,")
    assert reason in _llm_events()[0].detail["reason"]


@pytest.mark.django_db
def test_unparseable_reply_and_client_error_keep_the_template(tenant, llm_on) -> None:  # type: ignore[no-untyped-def]
    llm_on(lambda s, u: "Sure! Here is your email: ...")
    assert run_recovery(tenant=tenant, event=_event()).payload["fallback_used"] is True

    def fail(system: str, user: str) -> str:
        raise TimeoutError("model timed out")

    llm.reset_chat_client()
    llm_on(fail)
    assert run_recovery(tenant=tenant, event=_event()).payload["source"] == "template"
    assert [e.detail["verdict"] for e in _llm_events()] == ["unparseable", "error"]


@pytest.mark.django_db
def test_the_spend_cap_refuses_calls_past_it(tenant, llm_on, settings) -> None:  # type: ignore[no-untyped-def]
    fake = llm_on(lambda s, u: GOOD)
    settings.PAYPILOT_LLM_BUDGET_USD = 0.0006
    assert run_recovery(tenant=tenant, event=_event()).payload["source"] == "llm"  # first call fits
    out = run_recovery(tenant=tenant, event=_event()).payload  # spend so far + estimate > cap
    assert (out["source"], out["fallback_used"]) == ("template", True)
    assert len(fake.calls) == 1
    events = _llm_events()
    assert [e.detail["verdict"] for e in events] == ["pass", "budget_refused"]
    assert events[1].detail["reason"] == "llm_budget_exhausted"
    assert llm.spent_this_month(tenant=tenant) == LlmUsage.objects.get().cost_usd


def test_spend_cap_is_per_tenant(llm_on, tenant, other_tenant, settings) -> None:  # type: ignore[no-untyped-def]
    fake = llm_on(lambda s, u: GOOD)
    settings.PAYPILOT_LLM_BUDGET_USD = 0.0006
    assert run_recovery(tenant=tenant, event=_event()).payload["source"] == "llm"
    assert run_recovery(tenant=tenant, event=_event()).payload["source"] == "template"  # tenant's cap reached
    assert run_recovery(tenant=other_tenant, event=_event()).payload["source"] == "llm"  # its own budget
    assert len(fake.calls) == 2
    assert llm.spent_this_month(tenant=other_tenant) == LlmUsage.objects.get(tenant=other_tenant).cost_usd


def test_prices_unknown_models_like_the_dearest() -> None:
    assert llm.cost_usd("some-new-model", input_tokens=1_000_000, output_tokens=0) == Decimal("2.500000")
    assert llm.cost_usd("gpt-4o-mini", input_tokens=1_000_000, output_tokens=1_000_000) == Decimal("0.750000")


def test_no_client_without_the_switch(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PAYPILOT_LLM_DRAFT = True
    settings.OPENAI_API_KEY = ""
    assert llm.get_chat_client() is None


@pytest.mark.django_db
def test_a_run_without_a_tenant_never_calls_the_model(llm_on) -> None:  # type: ignore[no-untyped-def]
    # LlmUsage is a tenant table: under row-level security a tenant-less row cannot be written.
    fake = llm_on(lambda s, u: GOOD)
    assert run_recovery(tenant=None, event=_event()).payload["source"] == "template"
    assert fake.calls == [] and not LlmUsage.objects.exists()
