"""The chat-model seam as the core sees it.

`dunning.llm` owns the one place a chat client is built (`build_chat_client`, which tests
replace), when it is switched on (`PAYPILOT_LLM_DRAFT=1` and `OPENAI_API_KEY`), the spend
cap and the metering. It registers those functions here from its AppConfig.ready(), so an
app that stands beside dunning on the core (reconciliation's layout suggestion) uses the
same guarded seam without importing dunning. With nothing registered there is no model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class ChatSeam:
    get_client: Callable[[], Any]  # the process-wide client (`complete(system=, user=, max_tokens=)`) or None
    estimate_cost: Callable[..., Decimal]  # (model, prompt_chars=, max_tokens=) -> USD
    budget_allows: Callable[..., bool]  # (tenant=, estimate=) -> bool
    usage_record: Callable[..., Any]  # (tenant=, model=, reply=) -> the metered row


_seam: ChatSeam | None = None


def chat_seam_register(seam: ChatSeam) -> None:
    global _seam
    _seam = seam


def chat_seam() -> ChatSeam | None:
    return _seam
