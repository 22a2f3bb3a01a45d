"""The refusal walk: invented cases through the real code paths, checked against the
refusal review (`manage.py refusal_walk`).

Everything happens inside one transaction that is rolled back at the end, in a throwaway
tenant, with the locmem email backend forced and the model client replaced at dunning's
one seam: nothing stays in the database and nothing leaves the machine.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from unittest import mock

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import transaction
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from approvals.refusals import refusal_list
from approvals.sending import send_approved
from approvals.services import approval_approve, approval_expire_stale, approval_open
from decisions.models import DecisionRecord
from dunning import llm, retrieval
from dunning.llm import ChatReply
from dunning.models import Draft
from dunning.services import draft_for_invoice as _draft_or_none
from ledger.models import Invoice
from ledger.services import customer_upsert, invoice_record_failure
from paypilot.models import Tenant
from paypilot.services import tenant_create, token_issue


def draft_for_invoice(*, invoice: Invoice) -> Draft:
    """The walk's tenant keeps the built-in table, which drafts for every failure code."""
    draft = _draft_or_none(invoice=invoice)
    assert draft is not None, "the built-in table never says no_email"
    return draft


ALLOWED = "allowed@walk.invalid"


@dataclass
class Case:
    name: str
    expected: bool  # True: must appear in the refusal view; False: a control that must not
    did: str = ""  # what the real code path answered
    source: str = ""  # which refusal source it should (or must not) appear in
    match: Callable[[dict[str, Any]], bool] = field(default=lambda item: False, repr=False)
    broken: bool = False  # a control that already misbehaved on its own path counts as appearing
    appeared: bool = False

    @property
    def ok(self) -> bool:
        return self.appeared == self.expected


@dataclass
class WalkReport:
    cases: list[Case]
    view: dict[str, Any]

    @property
    def ok(self) -> bool:
        return all(case.ok for case in self.cases)


class _Rollback(Exception):
    pass


class _WalkChat:
    """A model that does what an injected instruction asked: links to a stranger's site."""

    model = "gpt-4o-mini"

    def complete(self, *, system: str, user: str, max_tokens: int) -> ChatReply:
        text = json.dumps({
            "subject": "About your payment",
            "body": "Please pay here: http://evil.example/pay",
            "diagnosis": "The card expired.",
        })
        return ChatReply(text=text, input_tokens=100, output_tokens=50)


@contextmanager
def _llm_offline() -> Iterator[None]:
    """LLM drafting on, with the walk's model at dunning's seam and offline retrieval."""
    with override_settings(PAYPILOT_LLM_DRAFT=True, OPENAI_API_KEY="walk-offline-no-key"), \
            mock.patch.object(llm, "build_chat_client", lambda: _WalkChat()), \
            mock.patch.object(retrieval, "build_embedder", lambda: retrieval.HashingEmbedder()):
        llm.reset_chat_client()
        retrieval.reset_retriever()
        try:
            yield
        finally:
            llm.reset_chat_client()
            retrieval.reset_retriever()


class _Walk:
    def __init__(self) -> None:
        self.tenant: Tenant = tenant_create(slug=f"refusal-walk-{secrets.token_hex(4)}",
                                            name="Refusal walk (invented)")
        self.user = get_user_model().objects.create(
            username=f"refusal-walk-{secrets.token_hex(4)}", is_staff=True, is_superuser=True
        )
        token = token_issue(tenant=self.tenant, role="integrator", label="refusal walk").plaintext
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        self.count = 0

    def decide(self, body: dict[str, Any]) -> Any:
        return self.client.post("/decide", data=json.dumps(body), content_type="application/json")

    def invoice(self, *, email: str) -> Invoice:
        self.count += 1
        customer = customer_upsert(tenant=self.tenant, external_id=f"walk-cus-{self.count}",
                                   name="Walk Customer", email=email, currency="USD", locale="en")
        invoice = invoice_record_failure(
            tenant=self.tenant, provider="api", external_invoice_id=f"walk-in-{self.count}",
            amount_minor=4900, currency="USD", failure_code="card_expired", customer=customer,
        ).invoice
        if invoice is None:
            raise RuntimeError("the ledger did not record the walk's invoice")
        return invoice

    def approved_send(self, draft: Draft) -> tuple[int, str]:
        approval = approval_open(draft=draft)
        with mock.patch("approvals.services.send_enqueue", lambda **kwargs: None):
            approval_approve(approval=approval, user=self.user)
        result = send_approved(approval_id=approval.pk)
        return approval.pk, f"{result.outcome} {result.reason}".strip()


Match = Callable[[dict[str, Any]], bool]


def _row(key: str, value: Any, reason: str = "") -> Match:
    """Matches a refusal row whose `key` equals `value` (and whose reason is `reason`)."""
    return lambda item: value is not None and item.get(key) == value and (
        not reason or item.get("reason") == reason)


def _cases(walk: _Walk) -> list[Case]:
    cases: list[Case] = []

    response = walk.decide({"invoice_id": "walk-refused", "failure_code": "card_expired",
                            "customer_email": "x@walk.invalid"})
    refusal_id = response.json().get("refusal_id")
    cases.append(Case("refused /decide body", True, f"{response.status_code} {response.json().get('error')}",
                      "decision_refusals", _row("refusal_id", refusal_id)))

    response = walk.decide({"invoice_id": "walk-fallthrough", "failure_code": "walk_unlisted_code"})
    record = DecisionRecord.objects.filter(tenant=walk.tenant, invoice_ref="walk-fallthrough").first()
    cases.append(Case("fall-through to the default row", True,
                      f"{response.status_code} rule={record.rule_fired if record else '-'}",
                      "decision_fall_throughs", _row("decision", record.pk if record else None)))

    response = walk.decide({"invoice_id": "walk-matched", "failure_code": "card_expired"})
    matched = DecisionRecord.objects.filter(tenant=walk.tenant, invoice_ref="walk-matched").first()
    cases.append(Case("control: matched decision", False,
                      f"{response.status_code} rule={matched.rule_fired if matched else '-'}",
                      "decision_fall_throughs",
                      _row("decision", matched.pk if matched else None), broken=matched is None))

    draft = draft_for_invoice(invoice=walk.invoice(email="stranger@walk.invalid"))
    approval_id, did = walk.approved_send(draft)
    cases.append(Case("allowlist refusal", True, did, "suppressed_sends",
                      _row("approval", approval_id, "recipient_not_allowlisted")))

    base = draft_for_invoice(invoice=walk.invoice(email=ALLOWED))
    broken = Draft.objects.create(  # a template whose slot was never filled
        tenant=walk.tenant, invoice=base.invoice, decision=base.decision, subject=base.subject,
        body=f"{base.body}\n\nUse the code {{coupon_code}} at checkout.", locale=base.locale,
        source=base.source,
    )
    approval_id, did = walk.approved_send(broken)
    cases.append(Case("output-guard refusal", True, did, "suppressed_sends",
                      _row("approval", approval_id, "output_guard_refused")))

    with _llm_offline():
        swapped = draft_for_invoice(invoice=walk.invoice(email=ALLOWED))
    cases.append(Case("guard-swapped model draft", True,
                      f"source={swapped.source} fallback_used={swapped.fallback_used}", "guard_swaps",
                      _row("draft", swapped.pk)))

    draft = draft_for_invoice(invoice=walk.invoice(email=ALLOWED))
    stale = approval_open(draft=draft, now=timezone.now() - timedelta(hours=settings.PAYPILOT_APPROVAL_TTL_HOURS + 1))
    approval_expire_stale(tenant_id=walk.tenant.pk)
    result = send_approved(approval_id=stale.pk)
    cases.append(Case("expired approval", True, f"{result.outcome} {result.reason}", "suppressed_sends",
                      _row("approval", stale.pk, "approval_expired")))

    outbox_before = len(getattr(mail, "outbox", []))
    draft = draft_for_invoice(invoice=walk.invoice(email=ALLOWED))
    approval_id, did = walk.approved_send(draft)
    sent = len(getattr(mail, "outbox", [])) - outbox_before
    cases.append(Case("control: clean approved send", False, f"{did}, {sent} email(s) in the outbox",
                      "suppressed_sends", _row("approval", approval_id), broken=sent != 1))
    return cases


def refusal_walk_run() -> WalkReport:
    """Run every case, read the refusal view, roll everything back; returns the report."""
    report: WalkReport | None = None
    overrides = dict(
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        PAYPILOT_SEND_EMAIL=True, PAYPILOT_ALLOWED_RECIPIENTS=[ALLOWED], PAYPILOT_AI_DISCLOSURE="",
        PAYPILOT_HOLDOUT_PCT=0, PAYPILOT_HIGH_VALUE_ANNUAL=0, PAYPILOT_LLM_DRAFT=False,
        ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "testserver"],
        PAYPILOT_RATE_LIMIT_PER_TOKEN=0, PAYPILOT_RATE_LIMIT_PER_IP=0,
    )
    with override_settings(**overrides):
        try:
            with transaction.atomic():
                walk = _Walk()
                cases = _cases(walk)
                view = refusal_list(tenant=walk.tenant, limit=500)
                for case in cases:
                    items = [i.as_dict() for i in view["items"] if i.source == case.source]
                    case.appeared = case.broken or any(case.match(item) for item in items)
                report = WalkReport(cases=cases, view={
                    "refusals": [i.as_dict() for i in view["items"]], "sources": view["sources"],
                })
                raise _Rollback
        except _Rollback:
            pass
    if report is None:  # only reachable if the block above changed shape
        raise RuntimeError("the refusal walk produced no report")
    return report
