"""Acceptance: on the default path no chat or embedding client is ever constructed."""

from __future__ import annotations

import json

import openai
import pytest

from dunning import llm, retrieval
from dunning.pipeline import RecoveryInput
from dunning.services import run_recovery
from dunning.tests.factories import demo_customers


@pytest.fixture
def constructors_raise(monkeypatch):  # type: ignore[no-untyped-def]
    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a model client was constructed on the default path")

    for cls in (openai.OpenAI, openai.AsyncOpenAI, llm.OpenAIChatClient, retrieval.OpenAIEmbedder):
        monkeypatch.setattr(cls, "__init__", refuse)
    monkeypatch.setattr(llm, "build_chat_client", refuse)


@pytest.mark.django_db
def test_full_recovery_and_batch_construct_no_client(tenant, api_client_for, settings, constructors_raise) -> None:  # type: ignore[no-untyped-def]
    settings.OPENAI_API_KEY = ""
    settings.PAYPILOT_LLM_DRAFT = False
    demo_customers(tenant)
    result = run_recovery(tenant=tenant, store=True, event=RecoveryInput(
        customer_id="cust_002", amount_minor=29900, currency="EUR", failure_code="insufficient_funds"))
    assert result.draft is not None and result.payload["source"] == "template"
    assert retrieval.get_retriever().kind == "bm25"
    events = [{"customer_id": f"cust_00{i}", "amount": 10, "currency": "usd", "failure_code": "card_expired"}
              for i in range(1, 7)]
    response = api_client_for(tenant).post("/payment-failed/batch", data=json.dumps({"events": events}),
                                           content_type="application/json")
    assert response.status_code == 200 and len(response.json()["results"]) == 6
    assert llm.get_chat_client() is None


@pytest.mark.django_db
def test_drafting_switch_without_key_constructs_no_client(tenant, settings, constructors_raise) -> None:  # type: ignore[no-untyped-def]
    settings.OPENAI_API_KEY = ""
    settings.PAYPILOT_LLM_DRAFT = True
    out = run_recovery(tenant=tenant, event=RecoveryInput(
        customer_id="x", amount_minor=100, currency="USD", failure_code="generic_decline")).payload
    assert out["source"] == "template" and out["fallback_used"] is False
