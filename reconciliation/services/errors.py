"""Refusals of the read services (disputes, evidence, refunds, review): one exception, a reason code."""

from __future__ import annotations

# Reason codes (the public contract of `ReconLookupError.reason`).
DISPUTE_NOT_FOUND = "dispute_not_found"  # no dispute with this id for the tenant
BREAK_NOT_FOUND = "break_not_found"  # no break with this id for the tenant
ORDER_NOT_FOUND = "order_not_found"  # no imported order with this id
CHARGE_NOT_FOUND = "charge_not_found"  # no imported capture with this charge id
TARGET_MISSING = "order_or_charge_required"  # refund check without an order or a charge
BAD_AMOUNT = "invalid_amount"  # a refund amount that is not a positive integer of minor units
BAD_CURRENCY = "invalid_currency"  # not a three-letter ISO 4217 code
CURRENCY_MISMATCH = "currency_mismatch"  # the amount's currency is not the capture's
BAD_STATUS = "invalid_status"  # a dispute status filter outside the known values


class ReconLookupError(Exception):
    """An id the tenant does not have, or an argument the service cannot answer; `reason` is
    one of the codes above (the same whether the id is unknown or another tenant's)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
