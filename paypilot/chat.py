"""The chat-model seam as the core sees it.

`dunning.llm` owns the one place a chat client is built (`build_chat_client`, which tests
replace), when it is switched on (`PAYPILOT_LLM_DRAFT=1` and `OPENAI_API_KEY`), the spend
cap and the metering. It registers those functions here from its AppConfig.ready(), so an
app that stands beside dunning on the core (reconciliation's layout suggestion) uses the
same guarded seam without importing dunning. With nothing registered there is no model.
"""

from __future__ import annotations

import hashlib
import secrets
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


# Fencing of untrusted text, shared by every prompt built in any app (dunning's drafts,
# reconciliation's contract reading): the boundary is random per request, so text inside the
# fence cannot close it.
_BOUNDARY_PLACEHOLDER = "FENCE"


def new_boundary() -> str:
    return secrets.token_hex(12)


def fence(text: str, boundary: str) -> str:
    """Wrap untrusted text; fence markers inside it are neutralised first."""
    cleaned = text.replace("<<<", "< < <").replace(">>>", "> > >").replace(boundary, "")
    return f"<<<UNTRUSTED {boundary}>>>\n{cleaned}\n<<<END {boundary}>>>"


def prompt_hash(system: str, user: str, boundary: str) -> str:
    """sha256 of the prompt with the random boundary normalised, so one input hashes alike."""
    blob = f"{system}\n\n{user}".replace(boundary, _BOUNDARY_PLACEHOLDER)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]
