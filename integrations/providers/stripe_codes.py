"""Stripe's decline, advice and error codes to PayPilot failure codes, in the decline map's precedence.

Sources (copied into `integrations/data/`, checked against the facts by a test):
- `stripe_decline_codes.csv`: every decline code on docs.stripe.com/declines/codes (copy of
  2026-04-15, 50 card + 12 local-payment-method codes) with PayPilot's failure code.
- `stripe_decline_map.csv`: the precedence (advice_code, then the non-card rule, then the
  decline code, then `generic_decline`) and the advice-code overrides.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def _load_decline_codes() -> Mapping[str, str]:
    with (DATA_DIR / "stripe_decline_codes.csv").open(newline="", encoding="utf-8") as fh:
        table = {row["decline_code"]: row["proposed_failure_code"] for row in csv.DictReader(fh)}
    # stripe_decline_map.csv precedence-3 rows name codes outside the decline table too
    # (card_declined is an error code, not a decline code); they are added, never overridden.
    for row in _MAP_ROWS:
        if row["source_field"] == "decline_code" and row["precedence"] == "3":
            table.setdefault(row["stripe_value"], row["paypilot_failure_code"])
    return MappingProxyType(table)


def _load_map_rows() -> list[dict[str, str]]:
    with (DATA_DIR / "stripe_decline_map.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


_MAP_ROWS = _load_map_rows()
DECLINE_CODES: Mapping[str, str] = _load_decline_codes()
ADVICE_OVERRIDES: Mapping[str, str] = MappingProxyType(
    {
        row["stripe_value"]: row["paypilot_failure_code"]
        for row in _MAP_ROWS
        if row["source_field"] == "advice_code"
    }
)
# Stripe retries card and ACH Direct Debit (us_bank_account) invoices itself; any other
# method that failed with no next attempt scheduled will not be retried (map precedence 2).
RETRIED_METHOD_TYPES = frozenset({"card", "us_bank_account"})
FALLBACK_CODE = "generic_decline"
# Codes whose strategy relies on a retry; with no retry left they become retries_exhausted
# (the stripe_webhooks.md proposal: "unless a stronger code applies").
_RETRY_DEPENDENT = frozenset({"generic_decline", "insufficient_funds"})


def failure_code_for(*, invoice: Mapping[str, Any], error: Mapping[str, Any] | None) -> str:
    """PayPilot failure code for a failed invoice, in stripe_decline_map.csv's precedence.

    1. advice_code (do_not_try_again, confirm_card_data) outranks everything;
    2. a method Stripe does not retry (not card, not us_bank_account) with no next attempt;
    3. the decline code (every code Stripe publishes), else the error code;
    4. generic_decline.
    A retry-dependent result with no automatic retry left becomes retries_exhausted.
    """
    error = error or {}
    advice = error.get("advice_code") or (error.get("outcome") or {}).get("advice_code")
    if isinstance(advice, str) and advice in ADVICE_OVERRIDES:
        return ADVICE_OVERRIDES[advice]
    next_attempt = invoice.get("next_payment_attempt")
    method = error.get("payment_method_type") or ""
    if method and method not in RETRIED_METHOD_TYPES and next_attempt is None:
        return "direct_debit_not_retried"
    code = FALLBACK_CODE
    for candidate in (error.get("decline_code"), error.get("code"), error.get("failure_code")):
        if isinstance(candidate, str) and candidate in DECLINE_CODES:
            code = DECLINE_CODES[candidate]
            break
    if (
        code in _RETRY_DEPENDENT
        and next_attempt is None
        and invoice.get("status") == "open"
        and invoice.get("collection_method", "charge_automatically") == "charge_automatically"
    ):
        return "retries_exhausted"
    return code
