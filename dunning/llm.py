"""The one chat-model seam, its spend cap and the per-call audit event.

A chat client exists only when `PAYPILOT_LLM_DRAFT=1` and `OPENAI_API_KEY` are both set; a
key alone never enables chat. Tests replace `build_chat_client` (the seam); nothing else
constructs a client. Each call is metered in `LlmUsage`; with `PAYPILOT_LLM_BUDGET_USD` above
zero a call whose estimated cost would take this calendar month's spend past the cap is
refused before it is made.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Protocol

from django.conf import settings
from django.db.models import Sum

from dunning.models import LlmUsage
from paypilot.models import Tenant

# USD per million tokens (input, output), from OpenAI's published API pricing page
# (platform.openai.com/docs/pricing) for the models we expect; update with the page.
PRICES_PER_MTOK: dict[str, tuple[Decimal, Decimal]] = {
    "gpt-4o-mini": (Decimal("0.15"), Decimal("0.60")),
    "gpt-4o": (Decimal("2.50"), Decimal("10.00")),
    "gpt-4.1-nano": (Decimal("0.10"), Decimal("0.40")),
    "gpt-4.1-mini": (Decimal("0.40"), Decimal("1.60")),
    "gpt-4.1": (Decimal("2.00"), Decimal("8.00")),
}
# An unknown model (a compatible server, a new name) is priced like the dearest listed one,
# so the cap errs towards refusing.
_UNKNOWN_PRICE = max(PRICES_PER_MTOK.values(), key=lambda p: p[0] + p[1])
MAX_OUTPUT_TOKENS = 600


@dataclass(frozen=True)
class ChatReply:
    text: str
    input_tokens: int
    output_tokens: int


class ChatClient(Protocol):
    model: str

    def complete(self, *, system: str, user: str, max_tokens: int) -> ChatReply: ...


class OpenAIChatClient:
    """Chat completions through the openai SDK (any compatible server via OPENAI_BASE_URL)."""

    def __init__(self, *, api_key: str, base_url: str = "", model: str) -> None:
        from openai import OpenAI

        self.model = model
        self._client = OpenAI(api_key=api_key, base_url=base_url or None, timeout=20.0, max_retries=1)

    def complete(self, *, system: str, user: str, max_tokens: int) -> ChatReply:
        response = self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=0.3,
            max_tokens=max_tokens,
            response_format={"type": "json_object"},
        )
        usage = response.usage
        return ChatReply(
            text=response.choices[0].message.content or "",
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )


def llm_drafting_enabled() -> bool:
    return bool(settings.PAYPILOT_LLM_DRAFT and settings.OPENAI_API_KEY)


def build_chat_client() -> ChatClient:
    """The seam: the only place a chat client is constructed."""
    return OpenAIChatClient(api_key=settings.OPENAI_API_KEY, base_url=settings.OPENAI_BASE_URL,
                            model=settings.PAYPILOT_LLM_MODEL)


_lock = threading.Lock()
_client: ChatClient | None = None


def get_chat_client() -> ChatClient | None:
    """The process-wide chat client, or None on the default (template) path."""
    global _client
    if not llm_drafting_enabled():
        return None
    if _client is None:
        with _lock:
            if _client is None:
                _client = build_chat_client()
    return _client


def reset_chat_client() -> None:
    global _client
    with _lock:
        _client = None


# --- spend ------------------------------------------------------------------------------

def cost_usd(model: str, *, input_tokens: int, output_tokens: int) -> Decimal:
    price_in, price_out = PRICES_PER_MTOK.get(model, _UNKNOWN_PRICE)
    return ((price_in * input_tokens + price_out * output_tokens) / Decimal(1_000_000)).quantize(
        Decimal("0.000001")
    )


def estimate_cost(model: str, *, prompt_chars: int, max_tokens: int = MAX_OUTPUT_TOKENS) -> Decimal:
    # About four characters per token for English-like text; the output is counted at its cap.
    return cost_usd(model, input_tokens=prompt_chars // 4 + 1, output_tokens=max_tokens)


def spent_this_month(*, tenant: Tenant, now: datetime | None = None) -> Decimal:
    """This tenant's model spend since the first of the month (UTC).

    The cap is per tenant on purpose: one tenant's volume must not switch drafting off for
    the others, and under row-level security a worker sees only the bound tenant's rows
    anyway, so a global sum could not be read the same way on every backend."""
    now = now or datetime.now(UTC)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    total = LlmUsage.objects.filter(tenant=tenant, created_at__gte=start).aggregate(total=Sum("cost_usd"))["total"]
    return total or Decimal(0)


def budget_allows(*, tenant: Tenant, estimate: Decimal) -> bool:
    """True when no cap is set, or the estimate fits under the tenant's remaining budget."""
    cap = Decimal(str(settings.PAYPILOT_LLM_BUDGET_USD or 0))
    if cap <= 0:
        return True
    return spent_this_month(tenant=tenant) + estimate <= cap


def usage_record(*, tenant: Tenant, model: str, reply: ChatReply) -> LlmUsage:
    """Meter one call against `tenant` (the one bound for row-level security)."""
    return LlmUsage.objects.create(
        tenant=tenant, model=model, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
        cost_usd=cost_usd(model, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens),
    )
