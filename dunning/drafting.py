"""The optional LLM redraft of the committed template, guarded and audited.

Runs only when `dunning.llm.get_chat_client()` returns a client. The committed template is
already in the state and stays there unless the model's draft parses, and after the name is
put back, passes `guard_check` in full. Every outcome writes one audit event with the model,
the prompt hash, the verdict and whether the template was kept (never the prompt or any PII).
"""

from __future__ import annotations

import logging

from decisions.rules import NO_RETRY_ACTIONS
from dunning import llm
from dunning.catalogue import catalogue
from dunning.guards import GuardVerdict, guard_check
from dunning.prompting import build_prompt, mask_customer, parse_reply, rehydrate
from dunning.state import RecoveryState
from paypilot.services import audit_record

logger = logging.getLogger("paypilot.dunning")

VERDICT_PASS = "pass"  # the model's draft is served
VERDICT_GUARD_FAILED = "guard_failed"  # the draft broke an output rule: template kept
VERDICT_UNPARSEABLE = "unparseable"  # not the JSON asked for: template kept
VERDICT_ERROR = "error"  # the call itself failed: template kept
VERDICT_BUDGET = "budget_refused"  # the spend cap refused the call before it was made


def _audit(state: RecoveryState, *, model: str, prompt_hash: str, verdict: str, reason: str = "") -> None:
    detail = {"model": model, "prompt_hash": prompt_hash, "verdict": verdict,
              "fallback_used": state.fallback_used}
    if reason:
        detail["reason"] = reason
    audit_record(event="dunning.llm.draft", tenant=state.tenant, actor="system", detail=detail)


def llm_redraft(state: RecoveryState) -> None:
    client = llm.get_chat_client()
    if client is None or state.tenant is None:
        # Every call is metered in LlmUsage, a tenant table: under row-level security a row
        # without a tenant cannot be written, so a tenant-less run keeps the template.
        return
    assert state.decision is not None and state.customer is not None and state.locale is not None
    decision = state.decision
    facts = {
        "locale": state.locale.used,
        "failure_code": decision.rule_fired,
        "attempt": decision.attempt,
        "churn_risk": decision.churn_risk,
        "action": decision.strategy.action,
        "tone": decision.strategy.tone,
        "retry_planned": decision.schedule.retry_at is not None
        and decision.strategy.action not in NO_RETRY_ACTIONS,
        "retry_in_days": decision.strategy.retry_in_days,
        "offer": decision.strategy.offer,
    }
    untrusted: dict[str, str] = dict(mask_customer(name=state.customer.name, email=state.customer.email))
    if state.customer.plan:
        untrusted["plan"] = state.customer.plan
    prompt = build_prompt(facts=facts, untrusted=untrusted, passages=state.passages)
    estimate = llm.estimate_cost(client.model, prompt_chars=len(prompt.system) + len(prompt.user))
    state.fallback_used = True  # until a draft is accepted
    if not llm.budget_allows(tenant=state.tenant, estimate=estimate):
        _audit(state, model=client.model, prompt_hash=prompt.hash, verdict=VERDICT_BUDGET,
               reason="llm_budget_exhausted")
        return
    try:
        reply = client.complete(system=prompt.system, user=prompt.user, max_tokens=llm.MAX_OUTPUT_TOKENS)
    except Exception as exc:  # noqa: BLE001 - any client failure keeps the committed template
        logger.warning("llm draft call failed: %s", type(exc).__name__)
        _audit(state, model=client.model, prompt_hash=prompt.hash, verdict=VERDICT_ERROR,
               reason=type(exc).__name__[:60])
        return
    llm.usage_record(tenant=state.tenant, model=client.model, reply=reply)
    draft = parse_reply(reply.text)
    if draft is None:
        _audit(state, model=client.model, prompt_hash=prompt.hash, verdict=VERDICT_UNPARSEABLE)
        return
    name_phrase = catalogue().slot_value(state.locale.used, "name", state.customer.name)
    subject = rehydrate(draft["subject"], name_phrase=name_phrase)
    body = rehydrate(draft["body"], name_phrase=name_phrase)
    diagnosis = rehydrate(draft["diagnosis"], name_phrase=name_phrase)
    # The final text, with the name back in, is what a customer would read: guard all of it.
    verdict = guard_check(subject=subject, body=f"{body}\n{diagnosis}")
    state.guard_verdict = verdict
    if not verdict.ok:
        _audit(state, model=client.model, prompt_hash=prompt.hash, verdict=VERDICT_GUARD_FAILED,
               reason=",".join(verdict.reasons))
        return
    state.subject, state.body, state.diagnosis = subject, body, diagnosis
    state.source = "llm"
    state.fallback_used = False
    state.guard_verdict = GuardVerdict(ok=True, reasons=[])
    _audit(state, model=client.model, prompt_hash=prompt.hash, verdict=VERDICT_PASS)
