"""Where apps register the expressions the shadow replay reads from their tables, so decisions imports none of them.

The replay (`decisions.shadow`) needs two facts its own rows may lack: the currency of a
decision row's amounts (ledger: the invoice the row names; dunning: the invoice of its
draft) and whether a draft was stored for it (dunning). Those apps register an expression
factory here from their `AppConfig.ready()`; the replay reads the lists. Like
`paypilot.mcp_registry`, this keeps the hook in the core: ledger registers without
importing the decisions app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Each factory returns a fresh expression evaluated per DecisionRecord row
# (OuterRef("pk"), OuterRef("invoice_ref")...).
_CURRENCY_SOURCES: list[Callable[[], Any]] = []
_DRAFT_SOURCES: list[Callable[[], Any]] = []


def register_currency_source(source: Callable[[], Any]) -> None:
    """An expression giving the currency of a decision row's amounts (NULL when unknown)."""
    if source not in _CURRENCY_SOURCES:
        _CURRENCY_SOURCES.append(source)


def register_draft_source(source: Callable[[], Any]) -> None:
    """A boolean expression: a draft was stored for this decision row."""
    if source not in _DRAFT_SOURCES:
        _DRAFT_SOURCES.append(source)


def currency_sources() -> tuple[Callable[[], Any], ...]:
    return tuple(_CURRENCY_SOURCES)


def draft_sources() -> tuple[Callable[[], Any], ...]:
    return tuple(_DRAFT_SOURCES)
